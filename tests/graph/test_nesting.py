"""Nested graphs, maps, ancestry, abort and ids, through the graph API."""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest

from bastion.core import RunFailed
from bastion.governance import Denied, Governor, max_cycles, max_depth
from bastion.graph import (
    Graph,
    GraphSignal,
    Layer,
    Node,
    NodeContext,
    NodeError,
    Registry,
)
from bastion.testing import VirtualClock


async def collect(graph: Graph, input: Any = None) -> list[GraphSignal]:
    return [signal async for signal in graph.stream(input)]


async def test_max_cycles_zero_denies_a_node_spawning_itself() -> None:
    # covers L-09, L-25, L-31 (scenario 12: spawn and check_ancestry)
    governor = Governor(policies=[max_cycles(0)], clock=VirtualClock())
    graph = Graph("router", governor=governor)

    async def router(inputs: list[Any], ctx: NodeContext) -> Any:
        reason = await ctx.check_ancestry("router")
        try:
            await ctx.spawn("router", inputs)
        except Denied as exc:
            return reason, exc.reason
        return "spawned"

    graph.add_node("router", router)
    result = await graph.run("hi")
    reason, denial = cast("tuple[str, str]", result.output)
    assert "max_cycles(0): 'router' already appears 1 time(s) above" in reason
    assert denial.startswith("max_cycles(0)")


async def test_graph_level_max_cycles_bounds_check_ancestry_and_cycle_rounds() -> None:
    # covers L-25 (scenario 12: graph-level policies)
    graph = Graph("loop", policies=[max_cycles(1)], entry="a")
    runs: list[str] = []

    async def a(inputs: list[Any], ctx: NodeContext) -> Any:
        runs.append("a")
        return await ctx.check_ancestry("a")

    graph.add_node("a", a).add_node("b", lambda inputs: runs.append("b"))
    graph.add_edge("a", "b").add_edge("b", "a")
    result = await graph.run()
    assert runs == ["a", "b", "a", "b"]  # one repeat allowed, the second refused
    assert result.stopped == ("a",)
    # In its repeat, 'a' already appears once above itself: spawning 'a' would be refused.
    refusal = result.outputs["a"]
    assert isinstance(refusal, str)
    assert "max_cycles(1): 'a' already appears 2 time(s) above" in refusal


async def test_max_depth_denies_spawn_chains_that_are_too_deep() -> None:
    # covers L-09, L-25 (scenario 13)
    registry = Registry()
    depths: list[int] = []

    async def ask(inputs: list[Any], ctx: NodeContext) -> Any:
        depths.append(len(ctx.ancestry))
        child = await ctx.spawn("ask", inputs[0] + 1)
        return child.raise_for_status().output

    registry.add_node("ask", ask)
    nested = registry.load({"key": "ask", "nodes": {"ask": "ask"}})
    nested.governor = Governor(policies=[max_depth(3)], clock=VirtualClock())
    result = await nested.run(0)
    assert depths == [0, 1, 2, 3]
    assert result.status == "failed"  # the error surfaces from the deepest level
    assert "max_depth(3): depth 4 is too deep" in repr(result.errors["ask"])


async def test_abort_stops_pending_work_and_still_ends_every_graph() -> None:
    # covers L-33 (scenario 21: nested graphs, no join deadlock)
    inner = Graph("inner")

    async def blocked(inputs: list[Any], ctx: NodeContext) -> None:
        await asyncio.Event().wait()

    inner.add_node("blocked", blocked)
    outer = Graph("outer")

    async def nest(inputs: list[Any], ctx: NodeContext) -> Any:
        return (await ctx.spawn(inner, 1)).output

    outer.add_node("nest", nest).add_node("quick", lambda inputs: "q")
    outer.add_node("join", lambda inputs: inputs)
    outer.add_edge("nest", "join").add_edge("quick", "join")
    stream = outer.stream()
    signals: list[GraphSignal] = []
    async for signal in stream:
        signals.append(signal)
        if signal.type == "node.before" and signal.node_key == "blocked":
            stream.abort("user pressed stop")
    types = [s.type for s in signals]
    assert types.count("graph.before") == types.count("graph.after") == 2
    aborted = {s.node_key for s in signals if isinstance(s, NodeError) and s.kind == "aborted"}
    assert aborted == {"blocked", "nest"}
    assert stream.result is not None
    assert stream.result.status == "aborted"
    assert "join" not in stream.result.outputs
    final = signals[-1]
    assert final.type == "graph.after"
    assert final.key == "outer"


async def test_pending_actions_raise_aborted_once_aborted() -> None:
    # covers L-28, L-33: work asked for after the abort raises Aborted
    from bastion.graph import Aborted

    outcome: list[str] = []
    entered = asyncio.Event()
    graph = Graph("late")

    async def late(inputs: list[Any], ctx: NodeContext) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            try:
                await ctx.exec("api", fn=lambda: None)
            except Aborted as exc:
                outcome.append(f"Aborted: {exc}")
            raise

    graph.add_node("late", late)
    abort = asyncio.Event()
    running = asyncio.ensure_future(graph.run(abort=abort))
    await entered.wait()
    abort.set()
    result = await running
    assert outcome == ["Aborted: aborted"]
    assert result.status == "aborted"


async def test_ids_are_unique_without_an_id_hook() -> None:
    # covers L-30 (scenario 24: cycles, maps and spawns in one execution)
    square = Graph("square")
    square.add_node("square", lambda inputs: inputs[0] ** 2)
    graph = Graph("ids", entry="source")
    graph.add_node("source", lambda inputs, ctx: [1, 2, 3] * (ctx.round + 1))
    graph.add_map("each", square)

    async def spawner(inputs: list[Any], ctx: NodeContext) -> Any:
        await ctx.spawn(square, 4)
        await ctx.spawn(square, 5)
        return sum(inputs[0])

    graph.add_node("spawner", spawner)
    graph.add_edge("source", "each").add_edge("each", "spawner")
    graph.add_edge("spawner", "source", when=lambda total: total < 30)  # 14, 28, 42
    signals = await collect(graph)
    node_ids = [s.node_id for s in signals if s.type == "node.before"]
    graph_ids = [s.graph_id for s in signals if s.type == "graph.before"]
    assert len(node_ids) == len(set(node_ids)) > 10
    assert len(graph_ids) == len(set(graph_ids)) > 5
    assert len({s.invocation_id for s in signals}) == 1


async def test_a_dispatcher_fans_out_and_a_merger_gets_all_outputs() -> None:
    # covers L-03, L-09 (scenario 26: and a fire-and-forget spawn does not block)
    background = asyncio.Event()
    finished: list[str] = []
    side = Graph("side")

    async def side_work(inputs: list[Any]) -> None:
        await background.wait()
        finished.append("side")

    side.add_node("side", side_work)
    graph = Graph("fanout")

    async def dispatch(inputs: list[Any], ctx: NodeContext) -> str:
        await ctx.spawn_nowait(side)
        return inputs[0]

    graph.add_node("dispatch", dispatch)
    for n in range(3):
        graph.add_node(f"worker{n}", lambda inputs, n=n: f"{inputs[0]}:{n}")
        graph.add_edge("dispatch", f"worker{n}").add_edge(f"worker{n}", "merge")

    def merge(inputs: list[Any]) -> list[Any]:
        background.set()  # the spawn is still waiting: the workers did not wait for it
        return inputs

    graph.add_node("merge", merge)
    result = await graph.run("job")
    assert result.output == ["job:0", "job:1", "job:2"]
    assert finished == ["side"]  # the root waited for it before it ended


async def test_node_returns_an_executed_ancestors_layers_and_output() -> None:
    # covers L-07, L-31 (scenario 27)
    class Draft(Node):
        def load_prompt(self, inputs: list[Any], ctx: NodeContext) -> list[Layer]:
            return [Layer("topic", inputs[0])]

        def execute(self, layers: Any, ctx: NodeContext) -> str:
            return f"draft on {layers[0].content}"

    graph = Graph("edges")
    graph.add_node("draft", Draft())

    def review(inputs: list[Any], ctx: NodeContext) -> Any:
        seen = ctx.node("draft")
        assert seen is not None
        return seen.layers, seen.output, ctx.node("publish")

    graph.add_node("review", review).add_node("publish", lambda inputs: "done")
    graph.add_edge("draft", "review").add_edge("review", "publish")
    result = await graph.run("graphs")
    assert result.outputs["review"] == ((Layer("topic", "graphs"),), "draft on graphs", None)


async def test_map_runs_the_sub_graph_per_item_in_order_and_bounded() -> None:
    # covers L-06
    in_flight = 0
    peak = 0
    release = asyncio.Event()

    async def slow_double(inputs: list[Any]) -> int:
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        if peak == 3:
            release.set()
        await release.wait()
        in_flight -= 1
        return inputs[0] * 2

    per_item = Graph("double")
    per_item.add_node("double", slow_double)
    graph = Graph("mapped")
    graph.add_node("load", lambda inputs: {"docs": list(range(10))})
    graph.add_map("each", per_item, items="docs", max_concurrency=3)
    graph.add_edge("load", "each")
    result = await graph.run()
    assert result.output == [n * 2 for n in range(10)]
    assert peak == 3


async def test_a_failed_item_fails_the_map_node() -> None:
    per_item = Graph("check")

    def check(inputs: list[Any]) -> int:
        if inputs[0] == 2:
            raise ValueError("two is bad")
        return inputs[0]

    per_item.add_node("check", check)
    graph = Graph("mapped")
    graph.add_node("load", lambda inputs: [1, 2, 3])
    graph.add_map("each", per_item)
    graph.add_edge("load", "each")
    result = await graph.run()
    error = result.errors["each"]
    assert isinstance(error, RunFailed)
    assert "two is bad" in str(error)


async def test_spawning_an_unknown_key_is_a_user_error_naming_it() -> None:
    from bastion.core import UserError

    graph = Graph("lonely")

    async def spawn(inputs: list[Any], ctx: NodeContext) -> None:
        await ctx.spawn("missing")

    graph.add_node("spawn", spawn)
    result = await graph.run()
    with pytest.raises(RunFailed, match="cannot spawn 'missing'"):
        result.raise_for_status()
    assert isinstance(result.errors["spawn"], UserError)


async def test_cancelling_a_run_from_outside_ends_its_background_work() -> None:
    # covers L-33: no orphan: fire-and-forget work stops with its root
    entered = asyncio.Event()
    side_cancelled = asyncio.Event()
    side = Graph("side")

    async def forever(inputs: list[Any]) -> None:
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            side_cancelled.set()
            raise

    side.add_node("forever", forever)
    graph = Graph("root")

    async def start(inputs: list[Any], ctx: NodeContext) -> None:
        await ctx.spawn_nowait(side)

    graph.add_node("start", start)
    running = asyncio.ensure_future(graph.run())
    await entered.wait()
    running.cancel()
    with pytest.raises(asyncio.CancelledError):
        await running
    await side_cancelled.wait()
