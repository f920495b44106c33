"""Random DAGs and cyclic graphs (hypothesis) against a reference model of the schedule.

The reference runs the documented semantics round by round in topological order: a node runs
when it is a seed or an edge into it fired this round, with the outputs of the fired edges in
edge order; back edges that fire seed the next round. The engine must run exactly the same
nodes with exactly the same inputs, each at most once per round, pair every ``after`` with its
``before``, and end (``graph.after`` once per ``graph.before``) when aborted at any point.

``BASTION_GRAPH_FUZZ=1000`` runs more examples than the default.
"""

from __future__ import annotations

import asyncio
import os
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.graph import Graph, GraphSignal, NodeContext

EXAMPLES = int(os.environ.get("BASTION_GRAPH_FUZZ", "60"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@dataclass(frozen=True)
class Spec:
    nodes: int
    edges: tuple[tuple[int, int, int], ...]  # (source, target, salt; 0 = unconditional)
    max_rounds: int


def fires(salt: int) -> Callable[[Any], bool] | None:
    if not salt:
        return None

    def when(output: Any) -> bool:
        return zlib.crc32(f"{output}|{salt}".encode()) % 3 != 0

    return when


@st.composite
def specs(draw: st.DrawFn, cyclic: bool) -> Spec:
    n = draw(st.integers(min_value=1, max_value=9))
    pairs = [(i, j) for i in range(n) for j in range(i + 1, n)]
    if cyclic:
        pairs += [(j, i) for i in range(n) for j in range(i, n)]
    chosen = draw(st.lists(st.sampled_from(pairs), unique=True, max_size=14)) if pairs else []
    edges = tuple((i, j, draw(st.integers(min_value=0, max_value=3))) for i, j in chosen)
    # Node 0 is the entry: every other node must be reachable from it.
    reached, changed = {0}, True
    while changed:
        changed = False
        for i, j, _ in edges:
            if i in reached and j not in reached:
                reached.add(j)
                changed = True
    extra = tuple((0, k, 0) for k in range(1, n) if k not in reached)
    return Spec(n, edges + extra, draw(st.integers(min_value=1, max_value=4)))


def build(spec: Spec, log: list[tuple[str, int, tuple[Any, ...]]]) -> Graph:
    graph = Graph("fuzz", entry="n0", max_rounds=spec.max_rounds, max_concurrency=3)
    for k in range(spec.nodes):

        async def node(inputs: list[Any], ctx: NodeContext) -> str:
            log.append((ctx.key, ctx.round, tuple(inputs)))
            return f"{ctx.key}@{ctx.round}"

        graph.add_node(f"n{k}", node)
    for i, j, salt in spec.edges:
        graph.add_edge(f"n{i}", f"n{j}", when=fires(salt))
    return graph


def reference(spec: Spec, graph: Graph) -> list[tuple[str, int, tuple[Any, ...]]]:
    """The documented schedule, computed the slow and obvious way."""
    topology = graph.compile()
    order = _topological(topology.keys, topology.forward)
    runs: list[tuple[str, int, tuple[Any, ...]]] = []
    seeds: dict[str, dict[int, Any]] = {"n0": {-1: "input"}}
    for round_ in range(spec.max_rounds):
        if not seeds:
            break
        inbox = {k: dict(v) for k, v in seeds.items()}
        seeds = {}
        for key in order:
            if key not in inbox:
                continue
            output = f"{key}@{round_}"
            runs.append((key, round_, tuple(inbox[key][s] for s in sorted(inbox[key]))))
            for target, slot, when in topology.forward[key]:
                if when is None or when(output):
                    inbox.setdefault(target, {})[slot] = output
            for target, slot, when in topology.back[key]:
                if when is None or when(output):
                    seeds.setdefault(target, {})[slot] = output
    return runs


def _topological(keys: tuple[str, ...], forward: Any) -> list[str]:
    indegree = dict.fromkeys(keys, 0)
    for key in keys:
        for target, _, _ in forward[key]:
            indegree[target] += 1
    ready = [k for k in keys if not indegree[k]]
    order: list[str] = []
    while ready:
        key = ready.pop(0)
        order.append(key)
        for target, _, _ in forward[key]:
            indegree[target] -= 1
            if not indegree[target]:
                ready.append(target)
    return order


def check_pairs(signals: list[GraphSignal]) -> None:
    open_nodes: set[str] = set()
    depth = 0
    for signal in signals:
        if signal.type == "graph.before":
            depth += 1
        elif signal.type == "graph.after":
            depth -= 1
        elif signal.type == "node.before":
            assert signal.node_id not in open_nodes
            open_nodes.add(signal.node_id)
        elif signal.type in ("node.after", "node.error"):
            open_nodes.remove(signal.node_id)
    assert depth == 0
    assert not open_nodes


async def run_and_compare(spec: Spec) -> None:
    log: list[tuple[str, int, tuple[Any, ...]]] = []
    graph = build(spec, log)
    signals = [s async for s in graph.stream("input")]
    check_pairs(signals)
    expected = reference(spec, graph)
    assert sorted(log) == sorted(expected)  # same nodes, rounds and inputs
    assert len({(key, round_) for key, round_, _ in log}) == len(log)  # once per round


@FUZZ
@given(specs(cyclic=False))
def test_random_dags_match_the_reference_schedule(spec: Spec) -> None:
    asyncio.run(run_and_compare(spec))


@FUZZ
@given(specs(cyclic=True))
def test_random_cyclic_graphs_match_the_reference_schedule(spec: Spec) -> None:
    asyncio.run(run_and_compare(spec))


async def abort_at(spec: Spec, after: int) -> None:
    log: list[tuple[str, int, tuple[Any, ...]]] = []
    graph = build(spec, log)
    stream = graph.stream("input")
    signals: list[GraphSignal] = []
    started = 0
    async for signal in stream:
        signals.append(signal)
        if signal.type == "node.before":
            started += 1
            if started == after:
                stream.abort("random abort")
    check_pairs(signals)
    assert stream.result is not None
    assert stream.result.status in ("aborted", "completed")
    assert signals[-1].type == "graph.after"


@FUZZ
@given(specs(cyclic=True), st.integers(min_value=1, max_value=12))
def test_abort_at_a_random_point_never_deadlocks(spec: Spec, after: int) -> None:
    asyncio.run(abort_at(spec, after))
