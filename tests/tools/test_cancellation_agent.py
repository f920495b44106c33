"""Aborting runs whose tools ignore cancellation; per-tool timeouts on a virtual clock (T-11)."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Awaitable, Callable
from typing import Any

import pytest

from bastion import Agent, AgentStream, ToolOptions, tool
from bastion.agent import LoopHooks
from bastion.core import (
    AgentEndEvent,
    AgentEvent,
    RunContext,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteStartEvent,
    ToolMessage,
)
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import Tool

ABORTED = "Tool call aborted before it finished: the run was aborted."


def other_tasks() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


def lines(events: list[AgentEvent]) -> list[str]:
    out: list[str] = []
    for e in events:
        if isinstance(e, ToolExecuteStartEvent | ToolExecuteEndEvent):
            out.append(f"{e.type} {e.tool_call_id}")
        elif isinstance(e, ToolExecuteErrorEvent):
            out.append(f"{e.type} {e.tool_call_id} {e.kind}")
        elif isinstance(e, AgentEndEvent):
            out.append(f"agent.end {e.status}")
        else:
            out.append(e.type)
    return out


async def settled() -> None:
    """Wait until every task the run left behind has ended (an abandoned call returning)."""
    left = other_tasks()
    if left:
        await asyncio.wait(left, timeout=5)


@tool(side_effect_class="pure")
async def quick() -> str:
    """Return at once."""
    return "quick"


async def abort_when(
    run: AgentStream[str], ready: Callable[[], Awaitable[object]]
) -> list[AgentEvent]:
    """Consume ``run``; abort it from another task once ``ready()`` returned; the events."""

    async def consume() -> list[AgentEvent]:
        return [e async for e in run]

    consumer = asyncio.create_task(consume())
    await ready()
    run.abort()
    # The grace window is real time (it bounds a hung tool): allow far more than it.
    return await asyncio.wait_for(consumer, timeout=5)


def tool_messages(run: AgentStream[str]) -> list[tuple[str, str, bool]]:
    return [
        (m.tool_call_id, str(m.content), m.is_error)
        for m in run.result.messages
        if isinstance(m, ToolMessage)
    ]


@pytest.mark.parametrize("with_quick", [False, True], ids=["alone", "beside-another-call"])
async def test_an_async_tool_that_swallows_cancellation_is_abandoned(with_quick: bool) -> None:
    # covers T-11, G-60, D4
    release = asyncio.Event()
    started, finished = asyncio.Event(), asyncio.Event()
    swallowed: list[int] = []

    closed: list[int] = []

    @tool(side_effect_class="read_only")
    async def stubborn() -> str:
        """Refuse to be cancelled."""
        started.set()
        try:
            while not release.is_set():
                try:
                    await release.wait()
                except asyncio.CancelledError:
                    swallowed.append(1)  # and keep waiting: the bug the grace window bounds
        except GeneratorExit:
            closed.append(1)  # a lone call is closed when its grace window is over
            raise
        finished.set()
        return "too late"

    calls = [Call("quick", id="q")] if with_quick else []
    model = ScriptedModel([Turn(tool_calls=[*calls, Call("stubborn", id="s")]), "unused"])
    agent = Agent(
        "a", model=model, tools=[quick, stubborn], tool_options=ToolOptions(cancel_grace=0.01)
    )
    run = agent.stream("go")
    try:
        events = await abort_when(run, started.wait)
        assert not finished.is_set()  # the run ended while the tool still ran
    finally:
        release.set()  # let the abandoned tool end, even when an assertion fails
    seen = lines(events)
    # End events stay in call order; "quick" may end before or after the abort request.
    assert seen[-2:] == ["tool.execute.error s aborted", "agent.end aborted"]
    assert [x for x in seen if x.startswith("tool.execute.e")] == [
        *(["tool.execute.end q"] if with_quick else []),
        "tool.execute.error s aborted",
    ]
    assert "agent.cancelling" in seen
    assert run.result.status == "aborted"
    assert swallowed == [1]
    expected = [("q", "quick", False)] if with_quick else []
    assert tool_messages(run) == [*expected, ("s", ABORTED, True)]
    assert len(model.requests) == 1
    if not with_quick:
        # A lone call runs in the run's own task: after the grace window its coroutine
        # is closed (its cleanup runs), so it never finishes and nothing is left behind.
        assert closed == [1]
        assert other_tasks() == set()
        return
    # Beside another call it runs in a task of its own, abandoned: it lives on until it
    # returns; then nothing is left behind.
    await finished.wait()
    await settled()
    assert other_tasks() == set()
    assert run.result.status == "aborted"  # what the tool returned late changed nothing
    assert tool_messages(run)[-1] == ("s", ABORTED, True)


@pytest.mark.parametrize("with_quick", [False, True], ids=["alone", "beside-another-call"])
async def test_a_sync_tool_blocked_in_a_thread_does_not_hold_the_run(with_quick: bool) -> None:
    # covers T-11, G-60, D4
    started, release, done = threading.Event(), threading.Event(), threading.Event()

    @tool(side_effect_class="read_only")
    def blocked() -> str:
        """Block the worker thread."""
        started.set()
        release.wait()
        done.set()
        return "too late"

    calls = [Call("quick", id="q")] if with_quick else []
    model = ScriptedModel([Turn(tool_calls=[*calls, Call("blocked", id="b")]), "unused"])
    agent = Agent(
        "a", model=model, tools=[quick, blocked], tool_options=ToolOptions(cancel_grace=0.01)
    )
    rows: list[object] = []
    agent.audit.subscribe(rows.append)
    run = agent.stream("go")
    try:
        events = await abort_when(run, lambda: asyncio.to_thread(started.wait))
        assert not done.is_set()  # the thread is still blocked: the run did not wait for it
    finally:
        release.set()  # let the worker thread end, even when an assertion fails
    seen = lines(events)
    assert seen[-2:] == ["tool.execute.error b aborted", "agent.end aborted"]
    assert [x for x in seen if x.startswith("tool.execute.e")] == [
        *(["tool.execute.end q"] if with_quick else []),
        "tool.execute.error b aborted",
    ]
    assert "agent.cancelling" in seen
    assert run.result.status == "aborted"
    assert tool_messages(run)[-1] == ("b", ABORTED, True)
    await asyncio.to_thread(done.wait)
    await settled()
    assert other_tasks() == set()


def test_the_default_grace_window_is_50_ms() -> None:
    # covers T-11, D4
    assert Agent("a", model=ScriptedModel([])).config.executor.cancel_grace == 0.05


def sleeper() -> Tool:
    @tool(side_effect_class="read_only", timeout=5)
    async def slow(ctx: RunContext[None], seconds: float) -> str:
        """Sleep on the run's clock."""
        await ctx.clock.sleep(seconds)
        return f"slept {seconds}"

    return slow


class _SeesResults(LoopHooks):
    """Sets ``finished`` when a tool result with ``marker`` has been taken by the run."""

    def __init__(self, marker: str) -> None:
        self.marker = marker
        self.finished = asyncio.Event()

    def after_tool_exec(self, ctx: RunContext[Any], tool_name: str, result: str) -> None:
        if result == self.marker:
            self.finished.set()  # the call's duration is read right after this, unsuspended


async def test_a_per_tool_timeout_runs_on_the_agents_clock() -> None:
    clock = VirtualClock(auto_advance=False)
    calls = [Call("slow", {"seconds": 10}, id="late"), Call("slow", {"seconds": 3}, id="ok")]
    model = ScriptedModel([Turn(tool_calls=calls), "done"])
    seen = _SeesResults("slept 3.0")
    agent = Agent("a", model=model, tools=[sleeper()], clock=clock, hooks=seen)
    rows: list[object] = []
    agent.audit.subscribe(rows.append)
    run = asyncio.create_task(agent.run("go"))
    await clock.wait_for_sleepers(4)  # two tools and their two deadlines
    clock.advance(3)
    await seen.finished.wait()  # "ok" returned and its call was measured, before time moves
    clock.advance(2)
    result = await run
    late, ok = result.tool_calls
    assert (late.error_kind, late.result, late.duration) == (
        "timeout",
        "Tool 'slow' timed out after 5 s.",
        5.0,
    )
    assert (ok.is_error, ok.result, ok.duration) == (False, "slept 3.0", 3.0)
    assert result.status == "completed"
    assert agent.audit.counters.get("tool.executor.errors.total{kind=timeout}") == 1
    assert other_tasks() == set()
