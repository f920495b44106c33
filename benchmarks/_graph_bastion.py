"""Bastion's side of ``benchmarks.graph``: the same workloads on ``bastion.graph.Graph``.

Each function returns ``run``, an ``async () -> int`` executing the graph once and returning
the count the caller checks (every node adds 1).
"""

from __future__ import annotations

import itertools
import json
import os
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bastion.graph import Graph, GraphResult, StoreCheckpointer
from bastion.stores import NewEntry

from .stores import _backend

__all__ = ["build_chain", "chain", "checkpointed", "cycle", "dag", "mapped"]

Runner = Callable[[], Awaitable[int]]


async def _add_one(inputs: list[Any]) -> int:
    return int(inputs[0]) + 1


async def _sum_plus_one(inputs: list[Any]) -> int:
    return sum(int(i) for i in inputs) + 1


def _count(result: GraphResult) -> int:
    """The graph's output: the count its nodes made."""
    output = result.output
    assert isinstance(output, int)
    return output


def build_chain(n: int, *, checkpointer: StoreCheckpointer | None = None) -> Graph:
    """``n`` nodes in a row, compiled (validated)."""
    graph = Graph("chain", checkpointer=checkpointer)
    for i in range(n):
        graph.add_node(f"n{i}", _add_one)
    for i in range(1, n):
        graph.add_edge(f"n{i - 1}", f"n{i}")
    graph.compile()
    return graph


def chain(n: int) -> Runner:
    """The chain; the output is ``n``."""
    graph = build_chain(n)

    async def run() -> int:
        return _count(await graph.run(0))

    return run


def dag(width: int, depth: int) -> Runner:
    """``width`` lanes of ``depth`` nodes, joined by one node summing the lanes (not counted)."""
    graph = Graph("dag", max_concurrency=width)
    for lane, level in itertools.product(range(width), range(depth)):
        graph.add_node(f"n{level}_{lane}", _add_one)
        if level:
            graph.add_edge(f"n{level - 1}_{lane}", f"n{level}_{lane}")
    graph.add_node("join", _sum_plus_one)
    for lane in range(width):
        graph.add_edge(f"n{depth - 1}_{lane}", "join")
    graph.compile()

    async def run() -> int:
        return _count(await graph.run(0)) - 1

    return run


def cycle(rounds: int) -> Runner:
    """One node looping on itself ``rounds`` times (a conditional back edge)."""
    graph = Graph("cycle", max_rounds=rounds + 1)
    graph.add_node("loop", _add_one)
    graph.add_edge("loop", "loop", when=lambda value: value < rounds)
    graph.compile()

    async def run() -> int:
        return _count(await graph.run(0))

    return run


def mapped(items: int) -> Runner:
    """A map of ``items`` values through a one-node graph, summed by the next node."""
    item = Graph("item")
    item.add_node("work", _add_one)
    graph = Graph("map")
    graph.add_map("each", item, max_concurrency=items)
    graph.add_node("total", lambda inputs: sum(inputs[0]) - sum(range(items)))
    graph.add_edge("each", "total")
    graph.compile()
    values = list(range(items))

    async def run() -> int:
        return _count(await graph.run(values))

    return run


def _bytes(payload: object) -> int:
    return len(json.dumps(payload, separators=(",", ":")).encode())


async def _commit(stores: Any, n: int) -> float:
    """Median seconds of one bare journal append of a node-sized entry (the store's commit)."""
    run_id = f"gx_commit{os.urandom(6).hex()}"
    payload = {"key": "n0@0", "node": "n0", "step": 0, "output": 1}
    await stores.journal.append(run_id, [NewEntry(kind="graph_started")], expected_seq=0)
    times: list[float] = []
    for seq in range(1, n + 1):
        start = time.perf_counter()
        entry = NewEntry(kind="graph_node_finished", payload=payload)
        await stores.journal.append(run_id, [entry], expected_seq=seq)
        times.append(time.perf_counter() - start)
    times.sort()
    return times[len(times) // 2]


async def checkpointed(backend: str, n: int, repeat: int) -> tuple[float, float, tuple[int, int]]:
    """Per checkpointed node of an ``n``-node chain: seconds, the bare commit, sizes.

    Each node's result is durable before the next node runs (one commit per node; the
    round's checkpoint rides the last one). The commit is one bare journal append of the
    same size on the same store, timed alongside (the part the database takes). The sizes
    are the JSON payload bytes the first and the last node's checkpoint wrote: equal when
    the size follows the delta.
    """
    async with _backend(backend) as stores:
        graph = build_chain(n, checkpointer=StoreCheckpointer(stores))
        times: list[float] = []
        sizes = (0, 0)
        for attempt in range(repeat + 1):
            execution_id = f"gx_bench{os.urandom(6).hex()}"
            start = time.perf_counter()
            result = await graph.run(0, execution_id=execution_id)
            elapsed = time.perf_counter() - start
            if result.output != n:
                raise AssertionError(f"expected {n}, got {result.output}")
            entries = await stores.journal.read(execution_id)
            finished = [e for e in entries if e.kind == "graph_node_finished"]
            if len(finished) != n:
                raise AssertionError(f"{len(finished)} node results journaled, not {n}")
            if attempt:  # the first is a warm-up
                times.append(elapsed)
                sizes = (_bytes(finished[0].payload), _bytes(finished[-1].payload))
        times.sort()
        return times[len(times) // 2] / n, await _commit(stores, n), sizes
