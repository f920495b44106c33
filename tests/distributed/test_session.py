"""Sessions as long-lived workflows, on the time-skipping test server."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from temporalio.client import WorkflowHandle, WorkflowUpdateHandle, WorkflowUpdateStage
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import Agent, UserError, tool
from bastion.core import (
    AgentEndEvent,
    AssistantMessage,
    Message,
    ModelError,
    ModelRequest,
    ToolMessage,
    UserMessage,
)
from bastion.distributed import SessionView, TemporalAgent
from bastion.testing import Call, FunctionModel, Turn


def _said(messages: list[Message]) -> list[tuple[str, str]]:
    """Each message as (role, what it says): text, the tool calls asked, or the result."""
    said: list[tuple[str, str]] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and message.tool_calls:
            said.append(("assistant", ",".join(c.name for c in message.tool_calls)))
        elif isinstance(message, AssistantMessage):
            said.append(("assistant", message.text))
        elif isinstance(message, (UserMessage, ToolMessage)):
            said.append((message.role, str(message.content)))
    return said


def _last_user(request: ModelRequest) -> str:
    last = request.messages[-1]
    return str(last.content) if isinstance(last, (UserMessage, ToolMessage)) else ""


def _echo(request: ModelRequest) -> Turn | str:
    """Calls ``hold`` for 'go', ``pay`` for 'pay N', fails for 'fail'; else 're: <last>'."""
    text = _last_user(request)
    if text == "go":
        return Turn(tool_calls=[Call("hold", {})])
    if text == "fail":
        raise ModelError("the model is down", retryable=False)
    if text.startswith("pay "):
        return Turn(tool_calls=[Call("pay", {"amount": int(text.split()[1])})])
    return f"re: {text}"


def _session_agent(started: asyncio.Event, release: asyncio.Event) -> TemporalAgent[str]:
    @tool(side_effect_class="read_only")
    async def hold() -> str:
        """Wait for the test to let go."""
        started.set()
        await release.wait()
        return "held"

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    return TemporalAgent(Agent("chat", model=FunctionModel(_echo), tools=[hold, pay]))


async def test_turns_keep_one_transcript_and_a_steer_lands_in_the_running_turn(
    time_skipping: WorkflowEnvironment,
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    remote = _session_agent(started, release)
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "chat-1")
        await session.send("hello")
        first = await session.settle()
        assert (first.status, first.turns, first.text) == ("idle", 1, "re: hello")
        await session.send("go")  # the turn's tool call waits for the test
        await started.wait()
        # covers S-07, S-14 (on Temporal: the steer joins before the turn's next model call)
        await session.send("stop that", mode="steer")  # joins this turn's next model call
        await session.send("later", mode="queue")  # its own turn, after this one
        release.set()
        view = await session.settle()
        await session.close()
        history = await client.get_workflow_handle("chat-1").fetch_history()
    # a replay of the whole history (signals, steering, three turns) makes the same decisions
    await Replayer(workflows=[remote.session_workflow]).replay_workflow(history)
    assert _said(view.messages) == [
        ("user", "hello"),
        ("assistant", "re: hello"),
        ("user", "go"),
        ("assistant", "hold"),
        ("tool", "held"),
        ("user", "stop that"),
        ("assistant", "re: stop that"),
        ("user", "later"),
        ("assistant", "re: later"),
    ]
    assert (view.status, view.turns, view.waiting, view.generation) == ("idle", 3, 0, 0)
    assert view.usage.requests == 4  # hello, go (hold), stop that, later


async def test_a_turn_parks_for_approval_and_a_steer_denies_the_undecided_call(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = _session_agent(asyncio.Event(), asyncio.Event())
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "chat-2")
        await session.send("pay 5")
        parked = await session.settle()
        assert parked.status == "awaiting_approval"
        assert _said(parked.messages) == [("user", "pay 5"), ("assistant", "pay")]
        [call] = parked.pending
        assert (call.tool_name, call.arguments) == ("pay", {"amount": 5})
        with pytest.raises(UserError, match="No call 'nope' is waiting"):
            await session.approve("nope")
        assert await session.approve(call.tool_call_id) == []
        paid = await session.settle()
        assert (paid.status, paid.text) == ("idle", "re: paid 5")
        await session.send("pay 7")
        assert (await session.settle()).status == "awaiting_approval"
        await session.send("never mind")  # steer: the call still waiting is denied
        # covers S-07 (a steer auto-denies the pending call, on Temporal)
        view = await session.settle()
    denied = view.messages[-3]
    assert isinstance(denied, ToolMessage)
    assert denied.is_error
    assert "steered" in str(denied.content)
    assert _said(view.messages)[-2:] == [("user", "never mind"), ("assistant", "re: never mind")]
    assert (view.status, view.turns, view.pending) == ("idle", 2, [])


async def test_continue_as_new_keeps_the_transcript_usage_and_waiting_messages(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    plain = _session_agent(asyncio.Event(), asyncio.Event())
    remote = TemporalAgent(plain.agent, events=f"sqlite:///{tmp_path / 'events.db'}")
    client = time_skipping.client
    views: list[SessionView] = []
    seqs: list[list[int]] = []
    async with remote.worker(client):
        for session_id, continue_after in (("short", 10), ("long", 10_000)):
            session = await remote.session(client, session_id, continue_after=continue_after)
            for text in ("one", "two", "three"):  # two and three wait while one runs
                await session.send(text, mode="queue")
            await session.settle()
            await session.send("four")
            views.append(await session.close())
            seqs.append([e.seq async for e in session.follow()])
        await remote.aclose()
    short, long = views
    # the seq goes on across continue-as-new: every event of the four turns, once
    assert seqs[0] == seqs[1] == list(range(1, len(seqs[1]) + 1))
    assert short.generation >= 3  # continued as new after every turn
    assert long.generation == 0
    assert short.messages == long.messages
    assert short.usage == long.usage
    assert short.turns == long.turns == 4
    assert [t for role, t in _said(short.messages) if role == "user"] == [
        "one",
        "two",
        "three",
        "four",
    ]
    assert short.status == "closed"


async def _settle_without_mark(handle: WorkflowHandle[Any, Any]) -> WorkflowUpdateHandle[str]:
    """A ``settle`` update whose mark was not sent: the run cannot continue as new before
    it answers, which it does once ``mark t0`` comes."""
    return await handle.start_update(  # pyright: ignore[reportUnknownMemberType]
        "settle", "t0", wait_for_stage=WorkflowUpdateStage.ACCEPTED, result_type=str
    )


async def _settle(handle: WorkflowHandle[Any, Any], token: str) -> str:
    return await handle.execute_update("settle", token, result_type=str)  # pyright: ignore[reportUnknownMemberType]


async def test_a_settle_whose_mark_reached_the_run_before_it_continued_as_new_still_answers(
    time_skipping: WorkflowEnvironment,
) -> None:
    """A ``mark`` applied by the run that then continued as new is carried to the next run.

    Two clients settle at once: the first one's update (its mark not there yet) holds the
    run open through its last turn; the second one's mark lands there first, its update
    after the continue-as-new. Without the marks in the carry, that update waits forever.
    """
    remote = _session_agent(asyncio.Event(), asyncio.Event())
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "marks", continue_after=10)
        handle = client.get_workflow_handle("marks")
        first = await _settle_without_mark(handle)
        await handle.signal("mark", "t1")  # the second client's mark, applied by this run
        await session.send("hello")  # a turn; after it the history is long enough
        await handle.signal("mark", "t0")
        assert await first.result()  # the turn ended: then the run continues as new
        async with asyncio.timeout(30):  # the next run knows t1 was marked
            text = await _settle(handle, "t1")
        view = await session.close()
    assert text, "the settle after continue-as-new answered the empty 'ask again'"
    assert (view.generation, view.turns, view.text) == (1, 1, "re: hello")


async def test_a_close_sent_while_the_run_waits_to_continue_as_new_closes_the_session(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = _session_agent(asyncio.Event(), asyncio.Event())
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "closing", continue_after=10)
        handle = client.get_workflow_handle("closing")
        held = await _settle_without_mark(handle)
        await session.send("hello")
        await handle.signal("mark", "t1")
        assert await _settle(handle, "t1")  # the turn ended
        await handle.signal("close")  # the run waits for t0 to continue as new
        await handle.signal("mark", "t0")
        assert await held.result()
        async with asyncio.timeout(30):  # had the close been dropped, this waits forever
            ended = await handle.result()  # the close above was the only one sent
        view = await session.view()
    assert (view.status, view.turns, view.generation) == ("closed", 1, 0)
    assert ended


async def test_bad_input_is_refused_before_anything_is_sent(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = _session_agent(asyncio.Event(), asyncio.Event())
    client = time_skipping.client
    with pytest.raises(UserError, match="continue_after must be at least 10"):
        await remote.session(client, "chat-3", continue_after=3)
    with pytest.raises(UserError, match="non-empty session id"):
        await remote.session(client, " ")
    async with remote.worker(client):
        session = await remote.session(client, "chat-3")
        with pytest.raises(UserError, match="send mode must be 'steer' or 'queue', got 'later'"):
            await session.send("hi", mode="later")  # pyright: ignore[reportArgumentType]
        with pytest.raises(UserError, match="non-empty text"):
            await session.send("")
        assert (await session.view()).turns == 0
        closed = await session.close()
        assert (closed.status, closed.messages) == ("closed", [])
        with pytest.raises(UserError, match="Session 'chat-3' is closed"):
            await session.send("hello?")
        again = await remote.session(client, "chat-3")  # attaches to the closed one
        assert (await again.view()).status == "closed"


async def test_a_failed_turn_is_reported_and_the_next_message_runs(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = _session_agent(asyncio.Event(), asyncio.Event())
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "chat-4")
        await session.send("fail")
        failed = await session.settle()
        assert (failed.status, failed.turns) == ("idle", 1)
        assert failed.error is not None
        assert "the model is down" in failed.error.message
        await session.send("hello again")
        view = await session.settle()
    assert view.error is None
    assert _said(view.messages) == [
        ("user", "fail"),
        ("user", "hello again"),
        ("assistant", "re: hello again"),
    ]


async def test_cancel_aborts_the_running_turn_and_closes_the_session(
    time_skipping: WorkflowEnvironment,
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    remote = _session_agent(started, release)
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "chat-cancel")
        await session.send("go")
        await started.wait()  # the turn is in its tool call
        await session.send("later", mode="queue")
        view = await session.cancel()
        release.set()  # the activity, not heartbeating, ends on its own
        with pytest.raises(UserError, match="is closed"):
            await session.send("anyone?")
    assert view.error is not None
    assert (view.status, view.error.code, view.waiting, view.turns) == (
        "closed",
        "run_aborted",
        0,
        1,
    )
    assert _said(view.messages) == [
        ("user", "go"),
        ("assistant", "hold"),
        ("tool", "Tool 'hold' did not finish: Cancelled."),
    ]


async def test_abort_stops_the_running_turn_and_the_session_takes_the_next_message(
    time_skipping: WorkflowEnvironment,
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    remote = _session_agent(started, release)
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "chat-abort")
        assert await session.abort() is False  # nothing runs, nothing waits
        await session.send("go")
        await started.wait()  # the turn is in its tool call
        await session.send("later", mode="queue")
        assert await session.abort("now") is True
        aborted = await session.settle()
        release.set()
        await session.send("pay 5")  # parks for approval
        assert (await session.settle()).status == "awaiting_approval"
        await session.send("then this", mode="queue")
        assert await session.abort("after_turn") is True  # drops 'then this' only
        [call] = (await session.view()).pending
        await session.approve(call.tool_call_id)
        paid = await session.settle()
        with pytest.raises(UserError, match="abort mode must be"):
            await session.abort("later")  # type: ignore[arg-type]
        await session.close()
        with pytest.raises(UserError, match="is closed"):
            await session.abort()
    assert aborted.error is not None
    assert (aborted.status, aborted.error.code, aborted.waiting, aborted.turns) == (
        "idle",
        "run_aborted",
        0,
        1,
    )
    assert (paid.status, paid.text, paid.turns, paid.waiting) == ("idle", "re: paid 5", 2, 0)
    assert ("user", "later") not in _said(paid.messages)
    assert ("user", "then this") not in _said(paid.messages)


async def test_a_sessions_turns_publish_their_events_with_one_seq(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    started, release = asyncio.Event(), asyncio.Event()
    release.set()
    plain = _session_agent(started, release)
    remote = TemporalAgent(plain.agent, events=f"sqlite:///{tmp_path / 'events.db'}")
    client = time_skipping.client
    async with remote.worker(client):
        session = await remote.session(client, "chat-events")
        await session.send("hello")
        first = [e async for e in session.follow()]
        await session.send("pay 5")  # parks for approval
        second = [e async for e in session.follow(after=first[-1].seq)]
        [call] = (await session.settle()).pending
        await session.approve(call.tool_call_id)
        third = [e async for e in session.follow(after=second[-1].seq)]
        again = [e async for e in session.follow(after=first[-1].seq)]  # a reconnection
        with pytest.raises(UserError, match="publishes no events"):
            (await plain.session(client, "chat-events")).follow()
        await remote.aclose()
    seen = first + second + third
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))  # one seq across turns
    assert (first[0].type, first[-1].type) == ("agent.start", "agent.end")
    ends = [e for e in seen if isinstance(e, AgentEndEvent)]
    assert [e.status for e in ends] == ["completed", "awaiting_approval", "completed"]
    assert len({e.run_id for e in ends}) == 2  # a turn is a run; the approval resumed it
    assert again == second + third
