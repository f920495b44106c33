"""Streaming tools through the agent: the bounded live-event buffer (T-21, T-22, D6)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bastion import Agent, ToolOptions, tool
from bastion.core import AgentEvent, RunContext, ToolMessage, UserError
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Progress

FULL = "".join(f"{i}," for i in range(1000))


@tool(side_effect_class="read_only")
async def burst() -> AsyncIterator[str]:
    """Stream 1,000 pieces without ever yielding to the event loop."""
    for i in range(1000):
        yield f"{i},"


@tool(side_effect_class="read_only")
async def paced() -> AsyncIterator[str | Progress]:
    """Stream 1,000 pieces, letting the loop run after each one."""
    for i in range(1000):
        yield f"{i},"
        if i % 100 == 0:
            yield Progress(current=i, total=1000)
        await asyncio.sleep(0)


def agent_for(*names: str, depth: int = 256) -> tuple[Agent[None, str], ScriptedModel]:
    model = ScriptedModel([Turn(tool_calls=[Call(n, id=n) for n in names]), "done"])
    agent: Agent[None, str] = Agent(
        "a", model=model, tools=[burst, paced], tool_options=ToolOptions(event_queue_depth=depth)
    )
    return agent, model


async def slow_consumer(agent: Agent[None, str], pause: int) -> list[AgentEvent]:
    events: list[AgentEvent] = []
    async for event in agent.stream("go"):
        events.append(event)
        for _ in range(pause):  # a consumer slower than the tool
            await asyncio.sleep(0)
    return events


def partials(events: list[AgentEvent], call_id: str) -> list[str]:
    return [
        e.content for e in events if e.type == "tool.execute.partial" and e.tool_call_id == call_id
    ]


def tool_results(model: ScriptedModel) -> dict[str, str | object]:
    return {
        m.tool_call_id: m.content for m in model.requests[1].messages if isinstance(m, ToolMessage)
    }


async def test_a_burst_keeps_the_newest_events_and_the_whole_result() -> None:
    # covers T-21, T-22, D6
    agent, model = agent_for("burst")
    events = await slow_consumer(agent, pause=3)
    seen = partials(events, "burst")
    # Nothing could be read while the tool ran: the queue kept the newest 256 events.
    assert seen == [f"{i}," for i in range(744, 1000)]
    assert agent.audit.counters.get("tool.streaming.dropped.total") == 744
    ends = [e for e in events if e.type == "tool.execute.end"]
    assert len(ends) == 1
    assert ends[0].result == FULL  # the assembled output is lossless
    assert tool_results(model) == {"burst": FULL}  # ... and so is what the model reads
    assert events.index(ends[0]) > max(
        i for i, e in enumerate(events) if e.type == "tool.execute.partial"
    )


async def test_a_slow_consumer_loses_only_the_oldest_live_events() -> None:
    # covers T-22, D6
    agent, model = agent_for("paced", depth=16)
    events = await slow_consumer(agent, pause=8)
    seen = partials(events, "paced")
    dropped = agent.audit.counters.get("tool.streaming.dropped.total")
    progress = [e for e in events if e.type == "tool.execute.progress"]
    assert dropped > 0
    assert len(seen) + len(progress) + dropped == 1000 + 10  # every event: read or dropped
    numbers = [int(p.rstrip(",")) for p in seen]
    assert numbers == sorted(numbers)  # order is kept
    assert numbers[-1] == 999  # the newest event is never the one dropped
    assert len(seen) < 1000
    assert tool_results(model) == {"paced": FULL}
    assert [e.type for e in events].count("tool.execute.end") == 1


async def test_completion_markers_are_never_dropped() -> None:
    # covers T-22, D6
    # Two streaming tools flood a queue of depth 1: both end events still come, in call order.
    agent, model = agent_for("burst", "paced", depth=1)
    events = await slow_consumer(agent, pause=2)
    ends = [(e.tool_call_id, e.result) for e in events if e.type == "tool.execute.end"]
    assert ends == [("burst", FULL), ("paced", FULL)]
    assert tool_results(model) == {"burst": FULL, "paced": FULL}
    live = [e for e in events if e.type in ("tool.execute.partial", "tool.execute.progress")]
    dropped = agent.audit.counters.get("tool.streaming.dropped.total")
    assert dropped + len(live) == 2010  # 2,000 pieces and 10 progress reports
    assert dropped > 1000


async def test_a_fast_consumer_loses_nothing() -> None:
    @tool(side_effect_class="read_only")
    # covers T-21
    async def chatty(ctx: RunContext[None]) -> None:
        """Report through the context."""
        for i in range(300):
            ctx.stream_content(f"{i};")
            ctx.report_progress(i, 300)
            await asyncio.sleep(0)

    model = ScriptedModel([Turn(tool_calls=[Call("chatty", id="c")]), "done"])
    agent = Agent("a", model=model, tools=[chatty])
    events = [e async for e in agent.stream("go")]
    assert partials(events, "c") == [f"{i};" for i in range(300)]
    assert len([e for e in events if e.type == "tool.execute.progress"]) == 300
    assert "tool.streaming.dropped.total" not in agent.audit.counters.snapshot()
    assert tool_results(model) == {"c": "".join(f"{i};" for i in range(300))}


def test_the_default_depth_is_256_and_must_be_positive() -> None:
    # covers T-22
    agent = Agent("a", model=ScriptedModel([]))
    assert agent.config.executor.event_queue_depth == 256
    with pytest.raises(UserError, match=r"tool_options\.event_queue_depth must be an integer >= 1"):
        Agent("a", model=ScriptedModel([]), tool_options=ToolOptions(event_queue_depth=0))
