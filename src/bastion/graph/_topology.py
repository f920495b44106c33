"""A graph definition checked and compiled into what the scheduler walks.

Built once per graph (``Graph.compile``), before anything runs: unknown nodes, nodes no entry
reaches, and cycles with no bound are :class:`UserError` errors naming the node. Back edges are
found by a depth-first walk from the entries (in the order nodes and edges were added); the
other edges form a DAG, scheduled by dependency counts. The *region* of a round (the nodes it
may run, reachable from its seeds over forward edges) and each node's dependency count in it
are computed once per set of seeds and cached.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bastion.core import UserError

__all__ = ["Edge", "Region", "Topology", "compile_topology"]

Condition = Callable[[Any], bool]


@dataclass(frozen=True, slots=True)
class Edge:
    """An edge ``source → target``, taken when ``when(output)`` is true (always without one).

    Attributes:
        source: The node whose output flows.
        target: The node that receives it.
        when: A condition on the source's output (``None``: always).
        label: A name for the condition (manifests and diagrams).
    """

    source: str
    target: str
    when: Condition | None = None
    label: str = ""


# (target, slot in the target's inputs, condition)
Out = tuple[str, int, "Condition | None"]


@dataclass(frozen=True, slots=True)
class Region:
    """The nodes one round may run and how many predecessors each waits for."""

    nodes: frozenset[str]
    waits: Mapping[str, int]


class Topology:
    """The compiled graph: entries, forward and back edges, slots, regions."""

    __slots__ = (
        "_regions",
        "back",
        "cycles",
        "entries",
        "forward",
        "incoming",
        "keys",
        "preds",
        "sinks",
    )

    def __init__(self, keys: Sequence[str], edges: Sequence[Edge], entries: Sequence[str]) -> None:
        self.keys = tuple(keys)
        self.entries = tuple(entries)
        incoming: dict[str, list[Edge]] = {k: [] for k in keys}
        back_edges = _back_edges(self.keys, edges, self.entries)
        forward: dict[str, list[Out]] = {k: [] for k in keys}
        back: dict[str, list[Out]] = {k: [] for k in keys}
        preds: dict[str, set[str]] = {k: set() for k in keys}
        for edge in edges:
            slots = incoming[edge.target]
            slot = len(slots)  # the edge's place among the target's inputs
            slots.append(edge)
            if edge in back_edges:
                back[edge.source].append((edge.target, slot, edge.when))
            else:
                forward[edge.source].append((edge.target, slot, edge.when))
                preds[edge.target].add(edge.source)
        self.incoming = {k: tuple(v) for k, v in incoming.items()}
        self.forward = {k: tuple(v) for k, v in forward.items()}
        self.back = {k: tuple(v) for k, v in back.items()}
        self.preds = {k: frozenset(v) for k, v in preds.items()}
        self.cycles = tuple(e for e in edges if e in back_edges)
        self.sinks = tuple(k for k in keys if not forward[k] and not back[k])
        self._regions: dict[frozenset[str], Region] = {}

    def region(self, seeds: Iterable[str]) -> Region:
        """The nodes reachable from ``seeds`` over forward edges, with their waits."""
        key = frozenset(seeds)
        cached = self._regions.get(key)
        if cached is not None:
            return cached
        nodes = set(key)
        todo = list(key)
        while todo:
            for target, _, _ in self.forward[todo.pop()]:
                if target not in nodes:
                    nodes.add(target)
                    todo.append(target)
        waits = {n: len(self.preds[n] & nodes) for n in nodes}
        region = self._regions[key] = Region(nodes=frozenset(nodes), waits=waits)
        return region

    def cycle_nodes(self, edge: Edge) -> list[str]:
        """The nodes on the cycles a back edge closes, in node order."""
        down = self.region([edge.target]).nodes
        up = {edge.source}
        todo = [edge.source]
        while todo:
            for pred in self.preds[todo.pop()]:
                if pred not in up:
                    up.add(pred)
                    todo.append(pred)
        return [k for k in self.keys if k in down and k in up]


def _back_edges(keys: Sequence[str], edges: Sequence[Edge], entries: Sequence[str]) -> set[Edge]:
    """Edges that close a cycle, found depth-first from the entries (iteratively)."""
    out: dict[str, list[Edge]] = {k: [] for k in keys}
    for edge in edges:
        out[edge.source].append(edge)
    back: set[Edge] = set()
    state: dict[str, int] = {}  # 1: on the stack, 2: done
    for entry in entries:
        if entry in state:
            continue
        state[entry] = 1
        stack: list[tuple[str, int]] = [(entry, 0)]
        while stack:
            node, index = stack[-1]
            if index == len(out[node]):
                state[node] = 2
                stack.pop()
                continue
            stack[-1] = (node, index + 1)
            edge = out[node][index]
            seen = state.get(edge.target)
            if seen == 1:
                back.add(edge)
            elif seen is None:
                state[edge.target] = 1
                stack.append((edge.target, 0))
    return back


def compile_topology(
    name: str,
    keys: Sequence[str],
    edges: Sequence[Edge],
    *,
    entry: Sequence[str],
    bounded: Callable[[Sequence[str]], bool],
) -> Topology:
    """Check a definition and compile it.

    Args:
        name: The graph's key, for messages.
        keys: Node keys in the order they were added.
        edges: Edges in the order they were added.
        entry: Explicit entry nodes (default: the nodes no edge leads to).
        bounded: Whether the nodes of a cycle have a bound besides a condition (a
            policy, ``max_rounds``).

    Raises:
        UserError: An empty graph, an edge naming an unknown node, a duplicate edge, no
            entry, a node no entry reaches, or a cycle with no bound.
    """
    if not keys:
        raise UserError(f"Graph {name!r} has no nodes: add one with add_node().")
    known = set(keys)
    available = ", ".join(repr(k) for k in keys)
    seen: set[tuple[str, str]] = set()
    for edge in edges:
        for end in (edge.source, edge.target):
            if end not in known:
                raise UserError(
                    f"Graph {name!r}: edge {edge.source!r} -> {edge.target!r} names unknown "
                    f"node {end!r}. Nodes: {available}."
                )
        if (edge.source, edge.target) in seen:
            raise UserError(
                f"Graph {name!r}: edge {edge.source!r} -> {edge.target!r} is added twice; "
                "keep one (combine their conditions)."
            )
        seen.add((edge.source, edge.target))
    for key in entry:
        if key not in known:
            raise UserError(f"Graph {name!r}: unknown entry node {key!r}. Nodes: {available}.")
    targets = {edge.target for edge in edges if edge.source != edge.target}
    entries = list(entry) or [k for k in keys if k not in targets]
    if not entries:
        raise UserError(
            f"Graph {name!r}: every node has an incoming edge, so none is an entry; name "
            f"one with Graph(..., entry={keys[0]!r})."
        )
    topology = Topology(keys, edges, entries)
    reached = set(entries)
    todo = list(entries)
    while todo:
        node = todo.pop()
        for target, _, _ in topology.forward[node] + topology.back[node]:
            if target not in reached:
                reached.add(target)
                todo.append(target)
    for key in keys:
        if key not in reached:
            raise UserError(
                f"Graph {name!r}: node {key!r} is unreachable from the entry "
                f"{', '.join(repr(e) for e in entries)}; add an edge to it or remove it."
            )
    for edge in topology.cycles:
        nodes = topology.cycle_nodes(edge)
        conditional = edge.when is not None or any(
            e.when is not None for e in edges if e.source in nodes and e.target in nodes
        )
        if not conditional and not bounded(nodes):
            path = " -> ".join(repr(n) for n in [*nodes, edge.target])
            raise UserError(
                f"Graph {name!r}: the cycle {path} at node {edge.target!r} has no bound. Give "
                f"an edge a condition (when=...), set max_rounds=, or add a policy such as "
                f"max_loop({edge.target!r}, 3) to the graph or the node."
            )
    return topology
