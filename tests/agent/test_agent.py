"""Agent configuration, instructions, max steps, concurrency and the sync entry point.

SPEC §3.1 scenarios 3, 4, 5, 22, 27; C6; A-04; A-05.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bastion import Agent, AgentHooks, AgentStream, Output, RunContext, ToolOptions, tool
from bastion.agent import RunOptions
from bastion.core import ConcurrentRunError, SystemMessage, UserError
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="pure")
def again() -> str:
    """Ask for another round."""
    return "again"


def looping(n: int) -> ScriptedModel:
    return ScriptedModel([Turn(text=f"round {i}", tool_calls=[Call("again")]) for i in range(n)])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"name": ""}, "non-empty"),
        ({"name": "a", "model": None}, "needs a model"),
        ({"name": "a", "max_steps": 0}, "max_steps"),
        ({"name": "a", "tool_options": ToolOptions(max_parallel=0)}, "tool_options.max_parallel"),
        ({"name": "a", "output_type": Output(str, retries=-1)}, "Output.retries"),
        ({"name": "a", "run_options": RunOptions(on_max_steps="explode")}, "on_max_steps"),  # pyright: ignore[reportArgumentType]
        ({"name": "a", "model_options": RunOptions()}, "model_options must be a ModelOptions"),
        ({"name": "a", "hooks": [AgentHooks(), AgentHooks()]}, "one of each"),
        ({"name": "a", "tools": [again, again]}, "two tools are named 'again'"),
        ({"name": "a", "model": "nowhere:model"}, "Unknown model provider 'nowhere'"),
        ({"name": "a", "model": "no-colon"}, "provider:model"),
    ],
)
def test_invalid_configuration_raises_user_error_at_once(
    kwargs: dict[str, Any], message: str
) -> None:
    # covers SPEC §3.1 scenario 3, STYLE 17
    settings: dict[str, Any] = {"model": ScriptedModel([])} | kwargs
    name = settings.pop("name")
    with pytest.raises(UserError, match=message):
        Agent(name, **settings)


def test_plain_functions_become_tools() -> None:
    def shout(text: str) -> str:
        """Shout."""
        return text.upper()

    agent = Agent("a", model=ScriptedModel([]), tools=[tool(shout, side_effect_class="pure")])
    assert [d.name for d in agent.config.tools.advertised] == ["shout"]


async def test_max_steps_fail_is_distinguishable() -> None:
    # covers C6, SPEC §3.1 scenario 22
    result = await Agent("a", model=looping(5), tools=[again], max_steps=2).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "stop_condition"
    assert result.steps == 2
    assert len(result.tool_calls) == 2


async def test_max_steps_return_stops_with_the_last_answer() -> None:
    # covers C6, SPEC §3.4 scenario 2
    model = looping(5)
    result = await Agent(
        "a", model=model, tools=[again], max_steps=2, run_options=RunOptions(on_max_steps="return")
    ).run("go")
    assert result.status == "stopped"
    assert result.stop_reason == "max_steps"
    assert result.output == "round 1"
    assert len(model.requests) == 2


async def test_instructions_string_callable_and_empty() -> None:
    # covers A-04, SPEC §3.1 scenario 27
    calls: list[str] = []

    async def dynamic(ctx: RunContext[Any]) -> str:
        calls.append(ctx.run_id)
        return f"Answer in {ctx.metadata['lang']}."

    model = ScriptedModel([Turn(tool_calls=[Call("again")]), "fin", "x", "y"])
    agent = Agent("a", model=model, instructions=dynamic, tools=[again])
    result = await agent.run("go", metadata={"lang": "French"})
    assert result.messages[0] == SystemMessage(content="Answer in French.")
    assert len(calls) == 1  # resolved once per run, not per step
    assert model.requests[1].messages[0] == SystemMessage(content="Answer in French.")
    plain = await Agent("b", model=model, instructions="Be brief.").run("go")
    assert plain.messages[0] == SystemMessage(content="Be brief.")
    empty = await Agent("c", model=model).run("go")
    assert empty.messages[0].role == "user"


async def test_a_provider_error_resolves_a_failed_result() -> None:
    # covers SPEC §3.1 scenario 4
    result = await Agent("a", model=ScriptedModel([])).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "model_error"
    assert "script has 0 turn(s)" in result.error.message


async def test_concurrent_runs_are_isolated() -> None:
    # covers A-02 (per-run context), S4 shape
    seen: list[tuple[str, int]] = []

    @tool(side_effect_class="read_only")
    async def record(ctx: RunContext[int]) -> str:
        """Record the caller."""
        seen.append((ctx.run_id, ctx.deps))
        return str(ctx.deps)

    from bastion.core import ModelRequest, ToolMessage
    from bastion.testing import FunctionModel

    def script(request: ModelRequest) -> Turn | str:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        return f"got {results[0].content}" if results else Turn(tool_calls=[Call("record")])

    agent: Agent[int, str] = Agent("a", model=FunctionModel(script), tools=[record])
    results = await asyncio.gather(*(agent.run("go", deps=i) for i in range(20)))
    assert [r.output for r in results] == [f"got {i}" for i in range(20)]
    assert len({run_id for run_id, _ in seen}) == 20


async def test_max_concurrent_runs_rejects_then_accepts() -> None:
    # covers SPEC §3.1 scenario 5
    gate, started = asyncio.Event(), asyncio.Event()

    @tool(side_effect_class="read_only")
    async def wait() -> str:
        """Wait for the gate."""
        started.set()
        await gate.wait()
        return "open"

    model = ScriptedModel([Turn(tool_calls=[Call("wait")]), "first done", "second done"])
    agent = Agent("a", model=model, tools=[wait], run_options=RunOptions(max_concurrent_runs=1))
    first_run = agent.stream("one")
    first = asyncio.create_task(_drain(first_run))
    await started.wait()  # the first run is in flight, inside its tool
    with pytest.raises(ConcurrentRunError, match="max_concurrent_runs=1"):
        await agent.run("two")
    gate.set()
    await first
    assert first_run.result.output == "first done"
    assert (await agent.run("three")).output == "second done"


def test_run_sync_outside_and_inside_a_loop() -> None:
    # covers ARCHITECTURE §1.1 (one sync wrapper at the edge)
    agent = Agent("a", model=ScriptedModel(["sync ok"]))
    assert agent.run_sync("go").output == "sync ok"

    async def inside() -> None:
        with pytest.raises(UserError, match="running event loop"):
            agent.run_sync("go")

    asyncio.run(inside())


async def _drain(run: AgentStream[Any]) -> None:
    async for _ in run:
        pass


async def test_event_bus_sees_every_event_of_stream_and_run() -> None:
    # covers A-36, C1
    from bastion.core import EventBus

    seen: list[str] = []
    bus = EventBus().on("*", lambda e: seen.append(e.type))
    agent = Agent("a", model=ScriptedModel(["one", "two"]), run_options=RunOptions(event_bus=bus))
    events = [e.type async for e in agent.stream("go")]
    assert seen == events
    seen.clear()
    await agent.run("again")
    assert seen == events


async def test_lazy_dependencies_are_made_once_per_run() -> None:
    # covers C15 (lazy deps resolved once per run), A-05
    from bastion.core import Lazy

    made: list[int] = []

    async def connect() -> str:
        made.append(1)
        return f"conn{len(made)}"

    @tool(side_effect_class="read_only")
    def use(ctx: RunContext[dict[str, Any]]) -> str:
        """Use the connection."""
        return f"{ctx.deps['db']} {ctx.dependencies['region']}"

    model = ScriptedModel([Turn(tool_calls=[Call("use"), Call("use")]), "ok", "x"])
    agent: Agent[dict[str, Any], str] = Agent("a", model=model, tools=[use])
    result = await agent.run("go", deps={"db": Lazy(connect), "region": "eu"})
    assert [c.result for c in result.tool_calls] == ["conn1 eu", "conn1 eu"]
    assert made == [1]


async def test_a_thread_tool_sees_the_cancel_token_of_a_hard_abort() -> None:
    # covers C15 (cancel token), G-60: a sync tool in a thread cannot be cancelled; it can poll
    import threading

    started = threading.Event()
    stop_seen = threading.Event()

    @tool(side_effect_class="read_only")
    def crunch(ctx: RunContext[None]) -> str:
        """Work until cancelled."""
        started.set()
        assert ctx.cancel_token.wait()  # blocks this worker thread until the abort
        assert ctx.cancelled
        stop_seen.set()
        return "stopped early"

    agent = Agent(
        "a", model=ScriptedModel([Turn(tool_calls=[Call("crunch")]), "x"]), tools=[crunch]
    )
    run = agent.stream("go")
    consumer = asyncio.create_task(_drain(run))
    await asyncio.to_thread(started.wait)
    run.abort()
    await consumer
    await asyncio.to_thread(stop_seen.wait)
    assert run.result.status == "aborted"
    assert stop_seen.is_set()
