"""Aborting a session's work: one message, or the current turn (SPEC S-04, C12)."""

# covers S-04, S-05, S-07, C12

from __future__ import annotations

import asyncio

from bastion import Agent, tool
from bastion.sessions import MessageAdded, SentMessage, Session, TextDelta, TurnAborted
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Tool, ToolCallRequest

from ._support import answered, record, texts, tools


def _blocking(started: asyncio.Event, gate: asyncio.Event) -> Tool:
    @tool(side_effect_class="read_only")
    async def fetch(what: str) -> str:
        """Fetch something slowly."""
        started.set()
        await gate.wait()
        return f"fetched {what}"

    return fetch


async def test_aborting_a_running_message_stops_its_turn_and_keeps_the_session() -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    log: list[str] = []
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("fetch", {"what": "x"}, id="c1"),
                    Call("look", {"what": "y"}, id="c2"),
                ]
            ),
            "fresh start",
        ]
    )
    agent = Agent("helper", model=model, tools=[_blocking(started, gate), *tools(log)])
    session: Session = agent.session()
    lines = record(session)
    errors: list[BaseException] = []
    session.on("error", lambda e: errors.append(e.error))
    sent = session.send("go")
    await started.wait()  # the turn is inside its tool call
    assert sent.status == "running"
    assert sent.abort()
    await session.wait_for_idle()  # an abort is not raised
    assert sent.status == "aborted"
    assert not sent.abort()  # its work is over
    assert lines[:5] == [
        "message user 'go'",
        "message assistant 2 calls",
        "step tool_calls",
        "tool_call fetch#c1",
        "tool_call look#c2",
    ]
    results = [line for line in lines if line.startswith("tool_result")]
    assert [r.split()[1] for r in results] == ["fetch#c1", "look#c2"]  # in call order
    assert results[0].endswith("True")  # the cut call reads as an error
    assert lines[-2:] == ["error TurnAborted", "turn_end 4 ''"]
    assert isinstance(errors[0], TurnAborted)
    assert answered(session.messages)  # every call has its result
    assert texts(session.messages)[:3] == ["user:go", "assistant:calls", "tool:c1!"]
    assert len(model.requests) == 1

    session.send("again")
    await session.wait_for_idle()
    assert texts(session.messages)[-2:] == ["user:again", "assistant:fresh start"]
    assert texts(list(model.requests[1].messages))[:4] == texts(session.messages)[:4]


async def test_aborting_a_queued_message_drops_only_that_message() -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    model = ScriptedModel(
        [Turn(tool_calls=[Call("fetch", {"what": "x"}, id="c1")]), "first", "third"]
    )
    agent = Agent("helper", model=model, tools=[_blocking(started, gate)])
    session: Session = agent.session()
    first = session.send("one")
    await started.wait()
    second = session.send("two", mode="queue")
    third = session.send("three", mode="queue")
    assert second.status == "pending"
    assert second.abort()
    gate.set()
    await session.wait_for_idle()
    assert (first.status, second.status, third.status) == ("done", "aborted", "done")
    assert texts(session.messages) == [
        "user:one",
        "assistant:calls",
        "tool:c1",
        "assistant:first",
        "user:three",
        "assistant:third",
    ]


async def test_session_abort_stops_the_turn_and_drops_what_waits() -> None:
    model = ScriptedModel(["one two three", "fresh"])
    session: Session = Agent("helper", model=model).session()
    lines = record(session)

    def stop_early(delta: TextDelta) -> None:
        if lines.count("text_delta 'one '") == 1 and len(lines) == 2:
            assert session.abort()

    session.on("text_delta", stop_early)
    go = session.send("go")
    later = session.send("later", mode="queue")
    await session.wait_for_idle()
    assert lines == ["message user 'go'", "text_delta 'one '", "error TurnAborted", "turn_end 1 ''"]
    assert (go.status, later.status) == ("aborted", "aborted")
    assert not session.abort()  # nothing left to abort
    assert len(model.requests) == 1

    session.send("again")
    await session.wait_for_idle()
    assert texts(session.messages) == ["user:go", "user:again", "assistant:fresh"]


async def test_a_message_aborted_before_its_turn_starts_leaves_no_trace() -> None:
    model = ScriptedModel(["hello"])
    session: Session = Agent("helper", model=model).session()
    lines = record(session)
    sent = session.send("hi")
    assert sent.abort()
    await session.wait_for_idle()
    assert lines == []
    assert session.messages == []
    assert model.requests == []
    session.send("hi again")
    await session.wait_for_idle()
    assert texts(session.messages) == ["user:hi again", "assistant:hello"]


async def test_aborting_a_steering_message_that_joined_aborts_its_turn() -> None:
    started, gate = asyncio.Event(), asyncio.Event()
    model = ScriptedModel([Turn(tool_calls=[Call("fetch", {"what": "x"}, id="c1")]), "unused"])
    session: Session = Agent("helper", model=model, tools=[_blocking(started, gate)]).session()
    steer_handles: list[SentMessage] = []

    def steer_then_release(request: ToolCallRequest) -> None:
        steer_handles.append(session.send("faster", mode="steer"))

    session.on("tool_call", steer_then_release)
    go = session.send("go")
    await started.wait()
    gate.set()

    def abort_the_steer(event: MessageAdded) -> None:
        if texts(session.messages)[-1:] == ["user:faster"]:
            steer = steer_handles[0]
            assert steer.status == "running"
            assert steer.abort()

    session.on("message", abort_the_steer)
    await session.wait_for_idle()
    assert go.status == "aborted"
    assert texts(session.messages) == ["user:go", "assistant:calls", "tool:c1", "user:faster"]
    assert len(model.requests) == 1  # the model was not called again
