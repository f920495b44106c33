"""Graph engine overhead: Bastion's graph beside LangGraph and pydantic-graph, in one run.

``python -m benchmarks.graph [--quick]`` prints a Markdown report. Every node is a
zero-latency ``async def`` adding 1, so the time is the framework's; a **floor** (the same
coroutines awaited in a plain loop, or gathered per level) is subtracted to give the
framework time per unit:

* **chain 10 / chain 100**: per node of a chain;
* **DAG 10 x 100**: per node of 100 parallel lanes of 10 nodes (10 super-steps of 100);
* **cycle**: per round of one node looping on itself 100 times (a back edge);
* **map**: per item of a 1,000-item fan-out into one node;
* **checkpointed step**: per super-step of a 100-node chain with a checkpoint per step,
  on SQLite (a temporary file) and PostgreSQL (a throwaway schema at
  ``BASTION_TEST_POSTGRES_DSN``); LangGraph with ``InMemorySaver`` (its SQLite and
  PostgreSQL savers are not in the lock);
* **checkpoint bytes per step** of a 100-node chain whose nodes each add one output;
* **build 10,000 nodes**: time to build and validate a 10,000-node chain, and the peak
  Python memory of doing it (``tracemalloc``, in a second, untimed build).

Each figure is the median over interleaved rounds (every framework in turn per round);
every run is checked (the output counts every node once).
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
import tracemalloc
from collections.abc import Awaitable, Callable

from . import _graph_bastion as bastion_side
from . import _graph_peers as peers

CHAIN_SIZES = (10, 100)
DAG_WIDTH = 100
DAG_DEPTH = 10
CYCLE_ROUNDS = 100
MAP_ITEMS = 1_000
CHECKPOINT_NODES = 100
BUILD_NODES = 10_000

Runner = Callable[[], Awaitable[int]]


async def _one() -> int:
    return 1


async def _floor_chain(n: int) -> int:
    total = 0
    for _ in range(n):
        total += await _one()
    return total


async def _floor_levels(width: int, depth: int) -> int:
    total = 0
    for _ in range(depth):
        total += sum(await asyncio.gather(*(_one() for _ in range(width))))
    return total


async def _time(run: Runner, expected: int, repeat: int) -> float:
    """Median seconds of one run over ``repeat`` runs, each checked."""
    times: list[float] = []
    for _ in range(repeat):
        start = time.perf_counter()
        value = await run()
        times.append(time.perf_counter() - start)
        if value != expected:
            raise AssertionError(f"expected {expected}, got {value}")
    return statistics.median(times)


def _workloads() -> list[tuple[str, int, int, dict[str, Runner], Runner]]:
    """(label, units, expected, runners by framework, floor)."""
    rows: list[tuple[str, int, int, dict[str, Runner], Runner]] = [
        (
            f"chain {n}, per node",
            n,
            n,
            {
                "bastion": bastion_side.chain(n),
                "langgraph": peers.lg_chain(n)[1],
                "pydantic-graph": peers.pg_chain(n)[1],
            },
            lambda n=n: _floor_chain(n),
        )
        for n in CHAIN_SIZES
    ]
    units = DAG_WIDTH * DAG_DEPTH
    rows.append(
        (
            f"DAG {DAG_DEPTH} x {DAG_WIDTH}, per node",
            units,
            units,
            {
                "bastion": bastion_side.dag(DAG_WIDTH, DAG_DEPTH),
                "langgraph": peers.lg_dag(DAG_WIDTH, DAG_DEPTH)[1],
                "pydantic-graph": peers.pg_dag(DAG_WIDTH, DAG_DEPTH)[1],
            },
            lambda: _floor_levels(DAG_WIDTH, DAG_DEPTH),
        )
    )
    rows.append(
        (
            f"cycle ({CYCLE_ROUNDS} rounds), per round",
            CYCLE_ROUNDS,
            CYCLE_ROUNDS,
            {
                "bastion": bastion_side.cycle(CYCLE_ROUNDS),
                "langgraph": peers.lg_cycle(CYCLE_ROUNDS)[1],
                "pydantic-graph": peers.pg_cycle(CYCLE_ROUNDS)[1],
            },
            lambda: _floor_chain(CYCLE_ROUNDS),
        )
    )
    rows.append(
        (
            f"map ({MAP_ITEMS} items), per item",
            MAP_ITEMS,
            MAP_ITEMS,
            {
                "bastion": bastion_side.mapped(MAP_ITEMS),
                "langgraph": peers.lg_map(MAP_ITEMS)[1],
                "pydantic-graph": peers.pg_map(MAP_ITEMS)[1],
            },
            lambda: _floor_levels(MAP_ITEMS, 1),
        )
    )
    return rows


async def _overheads(quick: bool) -> list[str]:
    rounds = 2 if quick else 3
    repeat = 5 if quick else 10
    lines = [
        "| workload | floor | bastion | langgraph | pydantic-graph |",
        "|---|---|---|---|---|",
    ]
    for label, units, expected, runners, floor in _workloads():
        samples: dict[str, list[float]] = {name: [] for name in ("floor", *runners)}
        for run in runners.values():  # warm-up, checked
            await _time(run, expected, 2)
        for _ in range(rounds):
            samples["floor"].append(await _time(floor, expected, repeat))
            for name, run in runners.items():
                samples[name].append(await _time(run, expected, repeat))
        base = statistics.median(samples["floor"])
        cells = [f"{base / units * 1e6:.2f} µs"]
        for name in runners:
            spent = (statistics.median(samples[name]) - base) / units
            cells.append(f"{spent * 1e6:.1f} µs")
        lines.append(f"| {label} | " + " | ".join(cells) + " |")
        print(f"  {label}: done", file=sys.stderr)
    return lines


async def _checkpointed(quick: bool) -> list[str]:
    repeat = 3 if quick else 10
    lines = [
        "",
        f"Checkpointed chain of {CHECKPOINT_NODES} nodes (a checkpoint per super-step):",
        "",
        "| store | per step | of which the store's commit | bytes per step (first / last) |",
        "|---|---|---|---|",
    ]
    for backend in ("sqlite", "postgres"):
        await bastion_side.checkpointed(backend, 10, 2)  # warm-up: first-use costs
        per_step, commit, sizes = await bastion_side.checkpointed(backend, CHECKPOINT_NODES, repeat)
        lines.append(
            f"| bastion {backend} | {per_step * 1e6:.0f} µs | {commit * 1e6:.0f} µs "
            f"| {sizes[0]} / {sizes[1]} |"
        )
        print(f"  checkpointed {backend}: done", file=sys.stderr)
    _, run = peers.lg_checkpointed(CHECKPOINT_NODES)
    await _time(run, CHECKPOINT_NODES, 2)
    per_run = await _time(run, CHECKPOINT_NODES, repeat)
    size = await peers.lg_checkpoint_bytes(CHECKPOINT_NODES)
    first, last = size
    lines.append(
        f"| langgraph InMemorySaver | {per_run / CHECKPOINT_NODES * 1e6:.0f} µs | (memory) "
        f"| {first} / {last} |"
    )
    lines.append("| langgraph SqliteSaver / PostgresSaver | not in the lock | | |")
    return lines


def _build(name: str, build: Callable[[], object]) -> tuple[float, float]:
    """(seconds, peak MiB): the median of 3 plain builds; memory traced in a fourth."""
    times: list[float] = []
    for _ in range(3):
        gc.collect()
        start = time.perf_counter()
        graph = build()
        times.append(time.perf_counter() - start)
        del graph
    gc.collect()
    tracemalloc.start()
    graph = build()
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    del graph
    print(f"  build {name}: done", file=sys.stderr)
    return statistics.median(times), peak / 2**20


def _builds() -> list[str]:
    lines = [
        "",
        f"Building a {BUILD_NODES:,}-node chain:",
        "",
        "| framework | time | peak memory |",
    ]
    lines.append("|---|---|---|")
    for name, build in (
        ("bastion", lambda: bastion_side.build_chain(BUILD_NODES)),
        ("langgraph", lambda: peers.lg_chain(BUILD_NODES)[0]),
        ("pydantic-graph", lambda: peers.pg_chain(BUILD_NODES)[0]),
    ):
        elapsed, peak = _build(name, build)
        lines.append(f"| {name} | {elapsed * 1e3:.0f} ms | {peak:.1f} MiB |")
    return lines


async def _main(quick: bool) -> None:
    print("\n".join(await _overheads(quick)), flush=True)
    print("\n".join(await _checkpointed(quick)), flush=True)


def main(argv: list[str] | None = None) -> int:
    """Run the graph benchmarks and print the report."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.graph", description=__doc__)
    parser.add_argument("--quick", action="store_true", help="fewer repetitions")
    args = parser.parse_args(argv)
    asyncio.run(_main(args.quick))
    print("\n".join(_builds()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
