"""Aborting a session's work: one message, or the current turn (SPEC S-04, C12)."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping, Sequence

from bastion import Agent, tool
from bastion.sessions import MessageAdded, SentMessage, Session, StepDone, TextDelta, TurnAborted
from bastion.stores import JsonObject, SessionEntry, SessionInfo, SessionStore, open_store
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
    # covers S-04, S-05
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
    session: Session = Session(agent)
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
    # covers S-04, S-07, C12
    started, gate = asyncio.Event(), asyncio.Event()
    model = ScriptedModel(
        [Turn(tool_calls=[Call("fetch", {"what": "x"}, id="c1")]), "first", "third"]
    )
    agent = Agent("helper", model=model, tools=[_blocking(started, gate)])
    session: Session = Session(agent)
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
    session: Session = Session(Agent("helper", model=model))
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
    # covers S-04
    model = ScriptedModel(["hello"])
    session: Session = Session(Agent("helper", model=model))
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
    # covers S-07, C12
    started, gate = asyncio.Event(), asyncio.Event()
    model = ScriptedModel([Turn(tool_calls=[Call("fetch", {"what": "x"}, id="c1")]), "unused"])
    session: Session = Session(Agent("helper", model=model, tools=[_blocking(started, gate)]))
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


async def test_an_abort_inside_a_step_listener_still_answers_every_call() -> None:
    stepped, never = asyncio.Event(), asyncio.Event()
    log: list[str] = []
    model = ScriptedModel([Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "next"])
    session: Session = Session(Agent("helper", model=model, tools=tools(log)))
    lines = record(session)

    async def slow_step(event: StepDone) -> None:
        if not stepped.is_set():
            stepped.set()
            await never.wait()  # cancelled by the abort

    session.on("step", slow_step)
    session.send("go")
    await stepped.wait()
    assert session.abort()
    await session.wait_for_idle()
    assert log == []
    assert answered(session.messages)
    assert texts(session.messages) == ["user:go", "assistant:calls", "tool:c1!"]
    assert lines[-3:] == [
        "tool_result look#c1 'Tool call not run: the turn was aborted.' True",
        "error TurnAborted",
        "turn_end 3 ''",
    ]
    session.send("again")
    await session.wait_for_idle()
    assert texts(session.messages)[-1] == "assistant:next"


class _SlowSessions:
    """A session store whose next assistant message waits until released."""

    def __init__(self, inner: SessionStore) -> None:
        self.inner = inner
        self.holding = asyncio.Event()
        self.release = asyncio.Event()

    async def append(
        self,
        session_id: str,
        *,
        kind: str,
        payload: Mapping[str, object],
        parent_id: str | None = None,
        entry_id: str | None = None,
        expect_head: bool = False,
    ) -> SessionEntry:
        assistant = '"role": "assistant"' in json.dumps(payload.get("message"))
        if assistant and not self.holding.is_set():
            self.holding.set()
            await self.release.wait()
        return await self.inner.append(
            session_id,
            kind=kind,
            payload=payload,
            parent_id=parent_id,
            entry_id=entry_id,
            expect_head=expect_head,
        )

    async def entries(self, session_id: str) -> list[SessionEntry]:
        return await self.inner.entries(session_id)

    async def get_state(self, session_id: str) -> JsonObject | None:
        return await self.inner.get_state(session_id)

    async def put_state(self, session_id: str, state: Mapping[str, object]) -> None:
        await self.inner.put_state(session_id, state)

    async def list_sessions(self, *, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        return await self.inner.list_sessions(limit=limit, offset=offset)

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        return await self.inner.delete_sessions(session_ids)


async def test_an_abort_during_a_store_write_lets_the_write_finish() -> None:
    stores = open_store("memory://")
    slow = _SlowSessions(stores.sessions)
    stores.sessions = slow
    log: list[str] = []
    model = ScriptedModel([Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "next"])
    session: Session = Session(Agent("helper", model=model, tools=tools(log), store=stores), "s")
    sent = session.send("go")
    await slow.holding.wait()  # the run's assistant message is being stored
    assert session.abort()
    slow.release.set()
    await session.wait_for_idle()
    assert sent.status == "aborted"
    assert log == []
    assert texts(session.messages) == ["user:go", "assistant:calls", "tool:c1!"]
    reopened = await Session.resume(Agent("helper", model=model, store=stores), "s")
    assert texts(reopened.messages) == texts(session.messages)  # the store holds it all
    entries = await stores.sessions.entries("s")
    assert [e.parent_id for e in entries[1:]] == [e.entry_id for e in entries[:-1]]


async def test_a_stored_turn_cut_short_gets_its_calls_answered_on_the_next_send() -> None:
    # A process that died mid-turn leaves a call without a result in the store.
    model = ScriptedModel([Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")]), "seen"])
    first: Session = Session(Agent("helper", model=model, tools=tools([])), "cut")
    first.send("go")
    await first.wait_for_idle()
    lines = (await first.export_jsonl()).splitlines(keepends=True)
    cut = "".join(lines[:-2])  # header, user, assistant(calls): the result was never stored

    later = ScriptedModel(["carrying on"])
    session = await Session.import_jsonl(Agent("helper", model=later, tools=tools([])), cut)
    assert texts(session.messages) == ["user:go", "assistant:calls"]
    session.send("still there?")
    await session.wait_for_idle()
    assert texts(list(later.requests[0].messages)) == [
        "user:go",
        "assistant:calls",
        "tool:c1!",
        "user:still there?",
    ]
    assert answered(session.messages)
