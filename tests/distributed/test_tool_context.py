"""Tools that take a RunContext, stream, or return a ToolResult, run as Temporal activities."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

from temporalio.testing import ActivityEnvironment, WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import Agent, RunContext, tool
from bastion.agent import RunOptions
from bastion.core import EventBus, Lazy, ToolMessage
from bastion.distributed import TemporalAgent
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import (
    ApprovalDecision,
    InputAnswer,
    InputRequest,
    InputRequired,
    Progress,
    ToolResult,
)

made: list[str] = []


def _shop() -> str:
    made.append("shop")
    return "corner shop"


@tool(side_effect_class="pure")
async def inspect(ctx: RunContext[dict[str, str]], item: str) -> ToolResult:
    """Inspect an item."""
    ctx.report_progress(1, 2, "looking")
    ctx.stream_content(f"{item} ")
    ctx.set_state("seen", item)
    return ToolResult(
        output={"shop": ctx.deps["shop"], "item": item, "requests": ctx.usage.requests},
        metadata={"source": "shelf"},
        untrusted=True,
        promote_tools=["restock"],
    )


@tool(side_effect_class="pure")
def recall(ctx: RunContext[dict[str, str]]) -> str:
    """What was seen last (sync, in a thread)."""
    ctx.stream_content("remembering ")
    return f"{ctx.get_state('seen', 'nothing')} at step {ctx.step} in {ctx.run_id}"


@tool(side_effect_class="pure")
async def lines(count: int) -> AsyncIterator[str | Progress]:
    """Stream lines."""
    for i in range(count):
        yield Progress(current=i + 1, total=count)
        yield f"line {i}\n"


@tool(side_effect_class="pure", defer_loading=True)
def restock(item: str) -> str:
    """Restock an item."""
    return f"restocked {item}"


def _shopper(seen: list[tuple[str, object]]) -> Agent[Any, str]:
    script = [
        Turn(tool_calls=[Call("inspect", {"item": "apple"})]),
        Turn(tool_calls=[Call("recall", {})]),
        Turn(tool_calls=[Call("lines", {"count": 2})]),
        "Done.",
    ]

    def note(event: Any) -> None:
        detail = getattr(event, "content", None) or getattr(event, "result", None)
        if event.type == "tool.execute.progress":
            detail = (event.current, event.total, event.message)  # 1 == 1.0 as locally
        seen.append((event.type, detail))

    bus = EventBus()
    for kind in ("tool.execute.partial", "tool.execute.progress", "tool.execute.end"):
        bus.on(kind, note)
    return Agent(
        "shopper",
        model=ScriptedModel(script),
        tools=[inspect, recall, lines, restock],
        deps={"shop": Lazy(_shop)},
        run_options=RunOptions(event_bus=bus),
    )


def _tool_messages(agent: Agent[Any, Any]) -> list[str]:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    return [str(m.content) for m in model.requests[-1].messages if isinstance(m, ToolMessage)]


def _roles(agent: Agent[Any, Any]) -> list[list[str]]:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    return [[m.role for m in r.messages] for r in model.requests]


def _tools_offered(agent: Agent[Any, Any]) -> list[list[str]]:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    return [sorted(t.name for t in r.tools) for r in model.requests]


async def test_context_streaming_and_tool_results_run_on_temporal_as_locally(
    time_skipping: WorkflowEnvironment,
) -> None:
    local_seen: list[tuple[str, object]] = []
    local_agent = _shopper(local_seen)
    local = await local_agent.run("Inspect the apple")
    assert made == ["shop"]
    made.clear()

    remote_seen: list[tuple[str, object]] = []
    agent = _shopper(remote_seen)
    remote_agent = TemporalAgent(agent)
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Inspect the apple")
        result = await remote_agent.result(client, handle.id)

    assert (result.status, result.output) == ("completed", local.output)
    # the model read the same results: deps from the worker, the usage so far, the session
    # state the first call left, the run's id, an async generator's lines joined
    messages = _tool_messages(agent)
    assert len(messages) == 3
    assert messages == [m.replace(local.run_id, result.run_id) for m in _tool_messages(local_agent)]
    assert f"apple at step 2 in {result.run_id}" in messages
    assert "line 0\nline 1\n" in messages
    # the ToolResult crossed whole: its promoted tool is offered from the next step on,
    # and its untrusted flag gives later requests the same inbound preamble
    assert _tools_offered(agent) == _tools_offered(local_agent)
    assert "restock" in _tools_offered(agent)[1]
    assert _roles(agent) == _roles(local_agent)
    assert [roles[0] for roles in _roles(agent)] == ["user", "system", "system", "system"]
    # the executor saw the same progress, pieces and ends, in the same order
    assert remote_seen == [
        (kind, d.replace(local.run_id, result.run_id) if isinstance(d, str) else d)
        for kind, d in local_seen
    ]
    assert ("tool.execute.progress", (1, 2, "looking")) in remote_seen
    assert ("tool.execute.partial", "line 1\n") in remote_seen
    # the Lazy dependency was made on the worker, for each call that takes a context
    assert made == ["shop", "shop"]
    made.clear()
    # the replies are the history: it replays without running a tool or diverging
    replayer = Replayer(workflows=[remote_agent.workflow])
    replayed = await replayer.replay_workflow(await handle.fetch_history())
    assert replayed.replay_failure is None
    assert made == []


async def test_a_streaming_tool_heartbeats_each_piece_and_progress_as_it_comes() -> None:
    remote_agent = TemporalAgent(_shopper([]))
    call_tool: Any = remote_agent.activities[1]  # model, tool, source, …
    env = ActivityEnvironment()
    beats: list[Any] = []
    env.on_heartbeat = lambda *details: beats.extend(details)
    text = await env.run(call_tool, "lines", '{"count": 2}', "")
    assert [(b.kind, b.text, b.current) for b in beats] == [
        ("progress", "", 1),
        ("partial", "line 0\n", 0),
        ("progress", "", 2),
        ("partial", "line 1\n", 0),
    ]
    assert '"value":null' in text  # the pieces are joined by the workflow's executor


@tool(side_effect_class="pure")
async def paint(ctx: RunContext[None], wall: str) -> str:
    """Paint a wall, asking which colour."""
    answer = ctx.input_answer
    if answer is None:
        ctx.stream_content("asking ")
        raise InputRequired(InputRequest(message=f"Which colour for the {wall}?", source="paint"))
    return f"painted the {wall} {answer.content['colour']}"


async def test_a_tool_that_asks_a_person_parks_the_workflow_and_runs_again_with_the_answer(
    time_skipping: WorkflowEnvironment,
) -> None:
    script = [Turn(tool_calls=[Call("paint", {"wall": "hall"})]), "Painted."]
    agent = Agent("painter", model=ScriptedModel(script), tools=[paint])
    remote_agent = TemporalAgent(agent)
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Paint the hall")
        parked = await remote_agent.settle(client, handle.id)
        [pending] = parked.pending
        assert parked.status == "awaiting_approval"
        assert pending.input is not None
        assert (pending.input.message, pending.input.source) == (
            "Which colour for the hall?",
            "paint",
        )
        answer = InputAnswer(tool_call_id=pending.tool_call_id, content={"colour": "green"})
        decision = ApprovalDecision(tool_call_id=pending.tool_call_id, granted=True, answer=answer)
        await remote_agent.decide(client, handle.id, decision)
        result = await remote_agent.result(client, handle.id)
    assert (result.status, result.output) == ("completed", "Painted.")
    assert _tool_messages(agent) == ["painted the hall green"]


async def test_a_cancelled_run_tells_a_sync_tool_in_its_thread_through_ctx(
    time_skipping: WorkflowEnvironment,
) -> None:
    told: asyncio.Queue[bool] = asyncio.Queue()
    loop = asyncio.get_running_loop()
    started = asyncio.Event()

    @tool(side_effect_class="read_only")
    def crunch(ctx: RunContext[None]) -> str:
        """Crunch until cancelled."""
        loop.call_soon_threadsafe(started.set)
        cancelled = ctx.cancel_token.wait(60)
        loop.call_soon_threadsafe(told.put_nowait, cancelled)
        return "crunched"

    script = [Turn(tool_calls=[Call("crunch", {})]), "Done."]
    agent = Agent("cruncher", model=ScriptedModel(script), tools=[crunch])
    remote_agent = TemporalAgent(agent, heartbeat_timeout=1.0)
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Crunch")
        await started.wait()
        await handle.cancel()
        assert await told.get() is True  # the thread stopped waiting: it was told
