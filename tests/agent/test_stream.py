"""Aborting runs: mid-stream, mid-tool, draining; no leaked tasks (G-60..G-62, SPEC §3.1 s. 20)."""

from __future__ import annotations

import asyncio

import pytest

from bastion import Agent, tool
from bastion.core import AgentEvent, ToolMessage, UserError
from bastion.testing import Call, ScriptedModel, Turn

from .conftest import brief


def _other_tasks() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


async def test_abort_mid_stream_from_the_consumer() -> None:
    # covers G-60
    words = [f"w{i} " for i in range(20)]
    model = ScriptedModel([Turn(text=words)])
    run = Agent("a", model=model).stream("go")
    seen: list[AgentEvent] = []
    async for event in run:
        seen.append(event)
        if event.type == "text.delta" and event.delta == "w2 ":
            run.abort()
    assert brief(seen) == [
        "agent.start",
        "step.start 1",
        "text.delta 'w0 '",
        "text.delta 'w1 '",
        "text.delta 'w2 '",
        "agent.cancelling",
        "agent.end aborted",
    ]
    assert run.result.status == "aborted"
    assert run.result.error is not None
    assert run.result.error.code == "run_aborted"
    assert _other_tasks() == set()


async def test_abort_from_another_task_interrupts_a_running_tool() -> None:
    # covers G-60, T-11 (the tool is cancelled), no task leak
    started = asyncio.Event()
    cancelled: list[bool] = []

    quick_done = asyncio.Event()

    @tool(side_effect_class="read_only")
    async def wait_forever() -> str:
        """Wait."""
        await quick_done.wait()
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    @tool(side_effect_class="pure")
    async def quick() -> str:
        """Return at once."""
        quick_done.set()
        return "quick"

    calls = [Call("quick", id="q"), Call("wait_forever", id="w")]
    model = ScriptedModel([Turn(tool_calls=calls), "unused"])
    agent = Agent("a", model=model, tools=[quick, wait_forever])
    run = agent.stream("go")

    quick_seen = asyncio.Event()

    async def consume() -> list[str]:
        events: list[AgentEvent] = []
        async for event in run:
            events.append(event)
            if event.type == "tool.execute.end":
                quick_seen.set()
        return brief(events)

    consumer = asyncio.create_task(consume())
    await started.wait()
    await quick_seen.wait()
    assert agent.abort() == 1
    lines = await consumer
    assert lines[-4:] == [
        "tool.execute.end quick#q",
        "agent.cancelling",
        "tool.execute.error wait_forever#w aborted",
        "agent.end aborted",
    ]
    assert cancelled == [True]
    assert not consumer.cancelled()  # the consumer's task saw no cancellation
    assert consumer.get_coro() is not None
    messages = run.result.messages
    results = [m for m in messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.is_error) for m in results] == [("q", False), ("w", True)]
    assert len(model.requests) == 1
    assert _other_tasks() == set()


async def test_drain_lets_the_step_finish_then_stops() -> None:
    # covers G-61
    gate = asyncio.Event()
    started = asyncio.Event()

    @tool(side_effect_class="read_only")
    async def slow() -> str:
        """Finish when released."""
        started.set()
        await gate.wait()
        return "finished"

    model = ScriptedModel([Turn(tool_calls=[Call("slow")]), "unused"])
    agent = Agent("a", model=model, tools=[slow])
    run = agent.stream("go")
    consumer = asyncio.create_task(_drain(run))
    await started.wait()
    run.abort(drain=True)
    gate.set()
    lines = await consumer
    assert lines[-4:] == [
        "tool.execute.end slow#call_0_0",
        "step.end 1 tool_calls",
        "agent.cancelling",
        "agent.end aborted",
    ]
    assert len(model.requests) == 1  # no further model call after the drained step
    assert run.result.tool_calls[0].result == "finished"


async def _drain(run: object) -> list[str]:
    from bastion import AgentStream

    assert isinstance(run, AgentStream)
    return brief([e async for e in run])


async def test_abort_before_start_yields_start_and_end_only() -> None:
    # covers G-60 (an already-aborted run makes no model call)
    model = ScriptedModel(["unused"])
    run = Agent("a", model=model).stream("go")
    run.abort()
    assert brief([e async for e in run]) == ["agent.start", "agent.cancelling", "agent.end aborted"]
    assert model.requests == []


async def test_external_cancellation_is_not_swallowed() -> None:
    # covers STYLE 15: a cancellation that is not an abort propagates
    model = ScriptedModel([Turn(text=[f"{i} " for i in range(1000)])])
    run = Agent("a", model=model).stream("go")

    streaming = asyncio.Event()
    hold = asyncio.Event()  # never set: the consumer sits mid-stream until cancelled

    async def consume() -> None:
        async for _ in run:
            streaming.set()
            await hold.wait()

    task = asyncio.create_task(consume())
    await streaming.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_result_before_the_end_is_a_user_error() -> None:
    run = Agent("a", model=ScriptedModel(["x"])).stream("go")
    with pytest.raises(UserError, match="has not ended"):
        _ = run.result


async def test_context_manager_closes_an_abandoned_run() -> None:
    # covers G-60: leaving the block early aborts and ends the run cleanly
    model = ScriptedModel([Turn(text=[f"{i} " for i in range(50)])])
    agent = Agent("a", model=model)
    async with agent.stream("go") as run:
        async for event in run:
            if event.type == "text.delta":
                break
    assert run.result.status == "aborted"
    assert agent.runs_in_flight == 0


async def test_an_abort_while_the_run_is_closing_is_ignored() -> None:
    # covers G-60: an abort that comes too late must not leak a cancellation to the caller
    from typing import Any

    from bastion import AgentHooks, RunContext, RunResult

    in_hook = asyncio.Event()
    release = asyncio.Event()

    class SlowAfterRun(AgentHooks):
        async def after_run(self, ctx: RunContext[Any], result: RunResult[Any]) -> None:
            in_hook.set()
            await release.wait()

    agent = Agent("a", model=ScriptedModel(["done"]), hooks=SlowAfterRun())
    task = asyncio.create_task(agent.run("go"))
    await in_hook.wait()
    assert agent.abort() == 1
    release.set()
    result = await task
    assert result.status == "completed"
    assert result.output == "done"
