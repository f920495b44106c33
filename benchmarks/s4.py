"""S4, concurrency: ``n`` concurrent S1 runs (async tool) in one fresh process.

Run as ``python -m benchmarks.s4 <framework> <n> [--seconds S]``; prints one JSON object:
the wall time of each ``asyncio.gather`` of ``n`` runs, the RSS after warm-up, and the
peak RSS. A fresh process per framework and per ``n`` keeps the RSS figures clean.
:func:`measure` is the parent's side.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import resource
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import psutil

from ._harness import concurrent_runs, verify
from ._registry import load, prepare_environment

__all__ = ["measure"]

WORKLOAD = "loop_async"
ROOT = Path(__file__).resolve().parent.parent
MAX_GATHERS = 20


def _peak_rss() -> int:
    """Peak RSS of this process in bytes.

    ``VmHWM`` rather than ``ru_maxrss``: on Linux ``ru_maxrss`` survives ``execve``, so a
    child started from a big parent would report the parent's size.
    """
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux


async def _child(name: str, n: int, seconds: float) -> dict[str, Any]:
    adapter = load(name)
    adapter.setup()
    await verify(adapter)
    await concurrent_runs(adapter, WORKLOAD, min(n, 50))
    gc.collect()
    base_rss = psutil.Process().memory_info().rss
    walls: list[float] = []
    start = time.perf_counter()
    while not walls or (len(walls) < MAX_GATHERS and time.perf_counter() - start < seconds):
        walls.append(await concurrent_runs(adapter, WORKLOAD, n))
    return {
        "framework": name,
        "n": n,
        "walls": walls,
        "base_rss_mb": base_rss / 2**20,
        "peak_rss_mb": _peak_rss() / 2**20,
    }


def measure(name: str, n: int, seconds: float) -> dict[str, Any]:
    """Run the S4 child for ``name`` and ``n`` in a fresh interpreter; return its figures."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.s4", name, str(n), "--seconds", str(seconds)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"S4 {name} x{n} failed: {tail}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def main(argv: list[str] | None = None) -> None:
    """Child entry point."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.s4", description=__doc__)
    parser.add_argument("framework")
    parser.add_argument("n", type=int)
    parser.add_argument("--seconds", type=float, default=3.0, help="time budget for repeats")
    args = parser.parse_args(argv)
    prepare_environment()
    print(json.dumps(asyncio.run(_child(args.framework, args.n, args.seconds))))


if __name__ == "__main__":
    main()
