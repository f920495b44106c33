"""Scheduling through the graph API: chains, joins, single nodes, conditions, cycles."""

from __future__ import annotations

from typing import Any

import pytest

from bastion.core import UserError
from bastion.governance import Governor, max_cycles, max_loop
from bastion.graph import Graph, GraphSignal, NodeContext
from bastion.testing import VirtualClock


def kinds(signals: list[GraphSignal]) -> list[tuple[str, str]]:
    return [(s.type, getattr(s, "node_key", "")) for s in signals]


async def collect(graph: Graph, input: Any = None) -> list[GraphSignal]:
    return [signal async for signal in graph.stream(input)]


async def test_a_chain_passes_each_node_its_predecessors_outputs() -> None:
    # covers L-03, L-05 (scenario 1: the root receives [input], each node a list)
    seen: dict[str, list[Any]] = {}

    def step(name: str):
        def node(inputs: list[Any]) -> str:
            seen[name] = inputs
            return f"{name}-out"

        return node

    graph = Graph("chain")
    for name in ("gather", "analyze", "execute"):
        graph.add_node(name, step(name))
    graph.add_edge("gather", "analyze").add_edge("analyze", "execute")
    result = await graph.run("task")
    assert seen == {
        "gather": ["task"],
        "analyze": ["gather-out"],
        "execute": ["analyze-out"],
    }
    assert result.status == "completed"
    assert result.output == "execute-out"


async def test_a_diamond_joins_both_branches_once() -> None:
    # covers L-03 (scenario 2: B and C after A, D once after both, with both outputs)
    order: list[str] = []
    inputs_of_d: list[list[Any]] = []

    def node(name: str):
        async def run(inputs: list[Any]) -> str:
            order.append(name)
            if name == "D":
                inputs_of_d.append(inputs)
            return name.lower()

        return run

    graph = Graph("diamond")
    for name in "ABCD":
        graph.add_node(name, node(name))
    graph.add_edge("A", "B").add_edge("A", "C").add_edge("B", "D").add_edge("C", "D")
    result = await graph.run(0)
    assert order[0] == "A"
    assert order[-1] == "D"
    assert sorted(order[1:3]) == ["B", "C"]
    assert inputs_of_d == [["b", "c"]]  # in edge order
    assert result.output == "d"


async def test_a_single_node_graph_has_one_before_and_one_after() -> None:
    # covers L-02, L-29 (scenario 3)
    graph = Graph("one")
    graph.add_node("only", lambda inputs: inputs[0] * 2)
    signals = await collect(graph, 21)
    assert kinds(signals) == [
        ("graph.before", ""),
        ("node.before", "only"),
        ("node.after", "only"),
        ("graph.after", ""),
    ]
    after = signals[-1]
    assert after.type == "graph.after"
    assert after.status == "completed"
    assert after.output == 42


async def test_a_two_node_cycle_loops_as_max_loop_allows() -> None:
    # covers L-03, L-25 (scenario 14: maxLoop at node level beats a global maxCycles(0))
    runs: list[str] = []
    governor = Governor(policies=[max_cycles(0)], clock=VirtualClock())
    graph = Graph("pingpong", governor=governor, entry="a")
    for key in ("a", "b"):

        def node(inputs: list[Any], ctx: NodeContext) -> None:
            runs.append(ctx.key)

        graph.add_node(key, node, policies=[max_loop(key, 2)])
    graph.add_edge("a", "b").add_edge("b", "a")
    result = await graph.run(None)
    assert runs == ["a", "b", "a", "b", "a", "b"]
    assert result.stopped == ("a",)
    assert result.status == "completed"


async def test_a_cycle_without_a_bound_is_refused_at_build_time() -> None:
    graph = Graph("forever", entry="a")
    graph.add_node("a", lambda inputs: 1).add_node("b", lambda inputs: 2)
    graph.add_edge("a", "b").add_edge("b", "a")
    with pytest.raises(UserError, match="cycle 'a' -> 'b' -> 'a' at node 'a' has no bound"):
        graph.validate()


async def test_a_node_added_after_a_run_brings_its_policies_to_the_governor() -> None:
    # covers L-25: node-level policies reach the governor whenever the node is added
    governor = Governor(clock=VirtualClock())
    graph = Graph("growing", governor=governor, entry="a", max_rounds=10)
    graph.add_node("a", lambda inputs: "a")
    assert (await graph.run()).status == "completed"
    graph.add_node("b", lambda inputs: "b", policies=[max_loop("b", 0)])
    graph.add_edge("a", "b").add_edge("b", "b")
    result = await graph.run()
    assert result.stopped == ("b",)  # max_loop('b', 0): its first repeat is refused
    assert result.rounds == 2
