"""Runtimes: the cost of one command, local and sandboxed (issue 16).

``python -m benchmarks.runtimes`` times ``exec`` of ``true`` (an argv list, no shell) on
``LocalRuntime`` and on ``SandboxRuntime`` (bubblewrap with every namespace new, rlimits,
and a ``pids`` cgroup where this process may create one), beside two floors: a bare
``asyncio.create_subprocess_exec("true")`` and the same ``bwrap`` command line started
bare. Then the shell form (``exec("true")`` runs ``bash -c true``) and the file methods.
Rounds are interleaved (each round times every variant in turn) so that load on the
shared machine hits all alike; the figure is the median over all rounds, in ms.
Every result is checked (exit code 0). Target: sandboxed ``exec`` of ``true`` <= 15 ms.
"""

from __future__ import annotations

import asyncio
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable

from bastion.core import ExecResult, SandboxConfig
from bastion.runtimes import LocalRuntime, SandboxRuntime, bwrap_argv, find_bwrap

ROUNDS = 10
PER_ROUND = 20
TARGET_MS = 15.0


async def _bare(argv: list[str]) -> None:
    process = await asyncio.create_subprocess_exec(*argv)
    if await process.wait() != 0:
        raise RuntimeError(f"{argv[0]} failed")


def _checked(result: ExecResult) -> None:
    if not result.ok:
        raise RuntimeError(f"exit {result.exit_code}: {result.stderr}")


async def main() -> None:
    """Time every variant and print a Markdown report."""
    with tempfile.TemporaryDirectory() as root:
        local = LocalRuntime(root)
        sandbox = SandboxRuntime(root, SandboxConfig(timeout=10))
        bare_bwrap = bwrap_argv(find_bwrap(), sandbox.cwd, sandbox.config, sandbox.cwd, ["true"])
        await local.write_file("data.txt", "x" * 4096)

        async def read() -> None:
            if len(await local.read_file("data.txt")) != 4096:
                raise RuntimeError("read_file")

        variants: dict[str, Callable[[], Awaitable[None]]] = {
            "floor: asyncio subprocess `true`": lambda: _bare(["true"]),
            "floor: bare `bwrap ... true`": lambda: _bare(bare_bwrap),
            "LocalRuntime.exec(['true'])": lambda: _run(local.exec(["true"])),
            "SandboxRuntime.exec(['true'])": lambda: _run(sandbox.exec(["true"])),
            "LocalRuntime.exec('true') (bash -c)": lambda: _run(local.exec("true")),
            "SandboxRuntime.exec('true') (bash -c)": lambda: _run(sandbox.exec("true")),
            "read_file 4 KB (either runtime)": read,
            "write_file 4 KB (atomic)": lambda: local.write_file("out.txt", "y" * 4096),
        }
        samples: dict[str, list[float]] = {name: [] for name in variants}
        for fn in variants.values():  # warm-up and check
            await fn()
        for _ in range(ROUNDS):
            for name, fn in variants.items():
                for _ in range(PER_ROUND):
                    start = time.perf_counter()
                    await fn()
                    samples[name].append(time.perf_counter() - start)
    print(f"### Runtimes: one command (median of {ROUNDS * PER_ROUND}, interleaved rounds)\n")
    print("| variant | median ms | min ms | p90 ms |")
    print("|---|---:|---:|---:|")
    for name, values in samples.items():
        ordered = sorted(values)
        p90 = ordered[int(len(ordered) * 0.9)]
        median, least = statistics.median(values) * 1000, ordered[0] * 1000
        print(f"| {name} | {median:.2f} | {least:.2f} | {p90 * 1000:.2f} |")
    load = os.getloadavg()[0]
    print(f"\nMachine: {os.cpu_count()} CPUs, load average {load:.1f} over the last minute.")
    sandboxed = statistics.median(samples["SandboxRuntime.exec(['true'])"]) * 1000
    print(f"\nTarget: sandboxed exec of `true` <= {TARGET_MS} ms median: {sandboxed:.2f} ms.")
    if sandboxed > TARGET_MS:
        print(f"over target: {sandboxed:.2f} ms > {TARGET_MS} ms", file=sys.stderr)


async def _run(call: Awaitable[ExecResult]) -> None:
    _checked(await call)


if __name__ == "__main__":
    asyncio.run(main())
