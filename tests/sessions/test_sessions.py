"""Sessions: send modes, listeners, persistence, JSONL (SPEC seed 004 S-02..S-20, C12)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from bastion import Agent
from bastion.agent import RunOptions
from bastion.core import ModelError, UserError
from bastion.sessions import SentMessage, Session, SessionError
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Deny, Rewrite, ToolCallRequest

from ._support import record, texts, tools


async def test_idle_send_runs_a_tool_turn_in_the_canonical_order() -> None:
    # covers S-02, S-04, S-05, S-06, S-09, S-12, S-15
    # (step, with usage and finish, comes before the step's tool calls)
    model = ScriptedModel(
        [Turn(text="Let me look", tool_calls=[Call("look", {"what": "sky"}, id="c1")]), "Blue sky"]
    )
    log: list[str] = []
    session: Session = Session(Agent("helper", model=model, tools=tools(log)), "s1")
    assert session.id == "s1"
    await session.wait_for_idle()  # idle: returns at once
    lines = record(session)
    steps: list[int] = []
    session.on("step", lambda e: steps.append(e.usage.completion_tokens))
    session.send("hi")
    await session.wait_for_idle()
    assert lines == [
        "message user 'hi'",
        "text_delta 'Let '",
        "text_delta 'me '",
        "text_delta 'look'",
        "message assistant 1 calls",
        "step tool_calls",
        "tool_call look#c1",
        "tool_result look#c1 'saw sky' False",
        "text_delta 'Blue '",
        "text_delta 'sky'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 4 'Blue sky'",
    ]
    assert len(steps) == 2
    assert all(tokens > 0 for tokens in steps)
    assert log == ["sky"]


async def test_two_calls_are_all_decided_before_any_result() -> None:
    # covers S-12, S-17, S-18, S-19
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("look", {"what": "a"}, id="c1"),
                    Call("look", {"what": "b"}, id="c2"),
                ]
            ),
            "done",
        ]
    )
    session: Session = Session(Agent("helper", model=model, tools=tools([])))
    lines = record(session)
    session.send("go")
    await session.wait_for_idle()
    assert lines == [
        "message user 'go'",
        "message assistant 2 calls",
        "step tool_calls",
        "tool_call look#c1",
        "tool_call look#c2",
        "tool_result look#c1 'saw a' False",
        "tool_result look#c2 'saw b' False",
        "text_delta 'done'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 5 'done'",
    ]


async def test_second_send_sees_the_history() -> None:
    # covers S-04
    model = ScriptedModel(["one", "two"])
    session: Session = Session(Agent("helper", model=model))
    session.send("a")
    await session.wait_for_idle()
    session.send("b")
    await session.wait_for_idle()
    assert texts(list(model.requests[1].messages)) == ["user:a", "assistant:one", "user:b"]


async def test_steer_injects_before_next_call_and_denies_undecided_calls() -> None:
    # covers S-07, S-14, S-17, S-19, C12
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("look", {"what": "a"}, id="c1"),
                    Call("look", {"what": "b"}, id="c2"),
                ]
            ),
            "Stopped",
        ]
    )
    log: list[str] = []
    session: Session = Session(Agent("helper", model=model, tools=tools(log)))
    lines = record(session)

    def steer_on_first(request: ToolCallRequest) -> None:
        if request.call.id == "c1":
            session.send("stop that", mode="steer")

    session.on("tool_call", steer_on_first)
    session.send("go")
    await session.wait_for_idle()
    assert lines == [
        "message user 'go'",
        "message assistant 2 calls",
        "step tool_calls",
        "tool_call look#c1",  # the steering message arrives here: c2 is never surfaced
        "tool_result look#c1 'saw a' False",
        "tool_result look#c2 'steered' True",
        "message user 'stop that'",  # after the tool results (S-19)
        "text_delta 'Stopped'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 6 'Stopped'",
    ]
    assert log == ["a"]  # the second call never ran
    assert texts(list(model.requests[1].messages)) == [
        "user:go",
        "assistant:calls",
        "tool:c1",
        "tool:c2!",
        "user:stop that",
    ]
    assert len(model.requests) == 2  # the steering message joined the same run


async def test_queue_is_processed_after_the_turn_in_the_same_loop() -> None:
    # covers S-07, S-16, C12
    model = ScriptedModel(
        [Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "First", "Second"]
    )
    log: list[str] = []
    session: Session = Session(Agent("helper", model=model, tools=tools(log)), send_mode="steer")
    lines = record(session)
    session.on("tool_call", lambda r: session.send("later", mode="queue"))
    session.send("go")
    await session.wait_for_idle()
    assert lines == [
        "message user 'go'",
        "message assistant 1 calls",
        "step tool_calls",
        "tool_call look#c1",
        "tool_result look#c1 'saw a' False",
        "text_delta 'First'",
        "message assistant 0 calls",
        "step stop",
        "message user 'later'",
        "text_delta 'Second'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 6 'Second'",
    ]
    assert texts(list(model.requests[1].messages)) == ["user:go", "assistant:calls", "tool:c1"]


async def test_tool_call_listeners_first_decision_wins() -> None:
    # covers S-06, S-10, S-11
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("look", {"what": "a"}, id="c1"),
                    Call("look", {"what": "b"}, id="c2"),
                ]
            ),
            "done",
        ]
    )
    log: list[str] = []
    consulted: list[str] = []
    session: Session = Session(Agent("helper", model=model, tools=tools(log)))
    results: list[tuple[str, str, bool]] = []
    session.on("tool_result", lambda e: results.append((e.call_id, e.result, e.is_error)))

    def first(request: ToolCallRequest) -> Deny | Rewrite | None:
        consulted.append(f"first {request.call.id}")
        if request.call.id == "c1":
            return Deny("no")
        return Rewrite({"what": "rewritten"})

    async def second(request: ToolCallRequest) -> Deny:
        consulted.append(f"second {request.call.id}")
        return Deny("never")

    session.on("tool_call", first).on("tool_call", second)
    session.send("go")
    await session.wait_for_idle()
    assert consulted == ["first c1", "first c2"]
    assert results == [("c1", "no", True), ("c2", "saw rewritten", False)]
    assert log == ["rewritten"]
    session.off("tool_call", first).off("tool_call", second)
    with pytest.raises(UserError):
        session.on("nope", first)  # pyright: ignore[reportCallIssue, reportArgumentType]


async def test_model_error_fires_error_and_wait_raises() -> None:
    # covers S-05, S-09
    model = ScriptedModel([Turn(error=ModelError("boom"))])
    session: Session = Session(Agent("helper", model=model, retry=None))
    errors: list[SessionError] = []
    session.on("error", errors.append)

    def bad(error: SessionError) -> None:
        raise ValueError("listener broke")

    session.on("error", bad)
    session.send("hi")
    with pytest.raises(RuntimeError, match="boom"):
        await session.wait_for_idle()
    assert len(errors) == 1


async def test_persists_across_agents_on_one_sqlite_store(tmp_path: Path) -> None:
    # covers S-03, S-20
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    model = ScriptedModel([Turn(tool_calls=[Call("remember", {"key": "k"}, id="c1")]), "noted"])
    agent = Agent("helper", model=model, tools=tools([]), store=url)
    session = Session(agent, "persisted")
    session.send("remember k")
    await session.wait_for_idle()
    assert session.session_state == {"k": 1}
    await agent.aclose()

    model2 = ScriptedModel([Turn(tool_calls=[Call("remember", {"key": "k"}, id="c2")]), "again"])
    agent2 = Agent("helper", model=model2, tools=tools([]), store=url)
    with pytest.raises(UserError, match="No session"):
        await Session.resume(agent2, "unknown")
    resumed: Session = await Session.resume(agent2, "persisted")
    assert resumed.session_state == {"k": 1}
    assert texts(resumed.messages) == [
        "user:remember k",
        "assistant:calls",
        "tool:c1",
        "assistant:noted",
    ]
    resumed.send("once more")
    await resumed.wait_for_idle()
    assert resumed.session_state == {"k": 2}
    assert texts(list(model2.requests[0].messages))[:4] == texts(resumed.messages)[:4]
    entries = await (await agent2.stores()).sessions.entries("persisted")
    assert [e.parent_id for e in entries[1:]] == [e.entry_id for e in entries[:-1]]
    assert entries[0].parent_id is None
    await agent2.aclose()


async def test_jsonl_round_trip_is_byte_equal() -> None:
    model = ScriptedModel(
        [Turn(tool_calls=[Call("remember", {"key": "x"}, id="c1")]), "ok ünïcode"]
    )
    session: Session = Session(Agent("helper", model=model, tools=tools([])), "exported")
    session.send("hi")
    await session.wait_for_idle()
    exported = await session.export_jsonl()
    other = Agent("helper", model=ScriptedModel(["next"]))
    imported = await Session.import_jsonl(other, exported)
    assert await imported.export_jsonl() == exported
    assert imported.session_state == {"x": 1}
    assert texts(imported.messages) == texts(session.messages)
    with pytest.raises(UserError, match="already exists"):
        await Session.import_jsonl(other, exported)
    with pytest.raises(UserError, match="Not a session export"):
        await Session.import_jsonl(other, "{}\n")
    imported.send("continue")
    await imported.wait_for_idle()
    assert texts(imported.messages)[-2:] == ["user:continue", "assistant:next"]


async def test_per_call_mode_beats_the_session_default() -> None:
    # covers S-08
    model = ScriptedModel([Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "Steered"])
    session: Session = Session(Agent("helper", model=model, tools=tools([])), send_mode="queue")

    async def steer(request: ToolCallRequest) -> None:
        session.send("now", mode="steer")

    session.on("tool_call", steer)
    session.send("go")
    await session.wait_for_idle()
    assert len(model.requests) == 2
    assert texts(list(model.requests[1].messages))[-1] == "user:now"


async def test_send_mode_defaults_from_agent_to_session_to_call() -> None:
    # covers S-08: agent, session and per-call levels; bad modes fail before anything runs
    model = ScriptedModel(
        [Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "First", "Second"]
    )
    agent = Agent(
        "helper", model=model, tools=tools([]), run_options=RunOptions(session_send_mode="queue")
    )
    assert Session(Agent("helper", model=model)).send_mode == "steer"
    assert Session(agent, send_mode="steer").send_mode == "steer"
    session: Session = Session(agent)
    assert session.send_mode == "queue"
    sent: list[SentMessage] = []
    session.on("tool_call", lambda r: sent.append(session.send("later")))  # queued
    session.send("go")
    await session.wait_for_idle()
    assert sent[0].mode == "queue"
    assert texts(list(model.requests[1].messages)) == ["user:go", "assistant:calls", "tool:c1"]
    assert texts(session.messages)[-2:] == ["user:later", "assistant:Second"]

    with pytest.raises(UserError, match="session_send_mode must be 'steer' or 'queue'"):
        Agent("helper", model=model, run_options=RunOptions(session_send_mode="later"))  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="send_mode must be 'steer' or 'queue'"):
        Session(agent, send_mode="later")
    fresh: Session = Session(agent)
    with pytest.raises(UserError, match="mode must be 'steer' or 'queue', got 'now'"):
        fresh.send("hi", mode="now")  # pyright: ignore[reportArgumentType]
    assert not fresh.running
    await fresh.wait_for_idle()
    assert fresh.messages == []


async def test_steering_during_the_answer_denies_every_call_of_the_step() -> None:
    # covers C12, S-14, S-17: no tool_call is surfaced; the message joins after the results
    model = ScriptedModel(
        [
            Turn(
                text="Checking",
                tool_calls=[
                    Call("look", {"what": "a"}, id="c1"),
                    Call("look", {"what": "b"}, id="c2"),
                ],
            ),
            "Ok",
        ]
    )
    log: list[str] = []
    session: Session = Session(Agent("helper", model=model, tools=tools(log)))
    lines = record(session)
    session.on("text_delta", lambda e: e.delta == "Checking" and session.send("wait", mode="steer"))
    session.send("go")
    await session.wait_for_idle()
    assert lines == [
        "message user 'go'",
        "text_delta 'Checking'",
        "message assistant 2 calls",
        "step tool_calls",
        "tool_result look#c1 'steered' True",
        "tool_result look#c2 'steered' True",
        "message user 'wait'",
        "text_delta 'Ok'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 6 'Ok'",
    ]
    assert log == []


async def test_failed_loop_rejects_waiters_and_next_send_starts_fresh() -> None:
    # covers S-05
    model = ScriptedModel([Turn(error=ModelError("boom")), "recovered"])
    session: Session = Session(Agent("helper", model=model, retry=None))
    session.send("one")
    session.send("two", mode="queue")  # dropped when the loop fails
    results = await asyncio.gather(
        session.wait_for_idle(), session.wait_for_idle(), return_exceptions=True
    )
    assert [type(r) for r in results] == [RuntimeError, RuntimeError]
    session.send("three")
    await session.wait_for_idle()
    assert texts(session.messages)[-2:] == ["user:three", "assistant:recovered"]
    assert not session.running


async def test_off_removes_a_listener_and_the_agent_itself_is_untouched() -> None:
    # covers S-06
    model = ScriptedModel([Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "one", "plain"])
    log: list[str] = []
    agent = Agent("helper", model=model, tools=tools(log))
    session: Session = Session(agent)
    denials: list[str] = []

    def deny(request: ToolCallRequest) -> Deny:
        denials.append(request.call.id)
        return Deny("no")

    session.on("tool_call", deny).off("tool_call", deny)
    session.send("go")
    await session.wait_for_idle()
    assert denials == []
    assert log == ["a"]
    assert agent.config.executor.gate.before_tool_call == ()  # the session's hook is per run
    result = await agent.run("hello")
    assert result.text == "plain"
