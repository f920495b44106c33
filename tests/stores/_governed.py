"""Real processes spending against governance limits kept in a shared store.

Mixed into each backend's test module, which provides the ``store_url`` fixture.
"""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from bastion.governance import Governor
from bastion.stores import StoreCounters, open_store

_WORKER = str(Path(__file__).with_name("_governed_worker.py"))


async def _line(proc: asyncio.subprocess.Process) -> str:
    assert proc.stdout is not None
    line = await asyncio.wait_for(proc.stdout.readline(), timeout=60)
    if not line:
        raise AssertionError(f"worker exited early with status {await proc.wait()}")
    return line.decode().strip()


async def _run_together(*argv: list[str]) -> list[str]:
    """Start workers, release them at once when all are ready, return their last lines."""
    procs = [
        await asyncio.create_subprocess_exec(
            sys.executable,
            _WORKER,
            *args,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
        )
        for args in argv
    ]
    for proc in procs:
        assert await _line(proc) == "ready"
    for proc in procs:
        assert proc.stdin is not None
        proc.stdin.write(b"go\n")
        await proc.stdin.drain()
    results = [await _line(proc) for proc in procs]
    assert [await proc.wait() for proc in procs] == [0] * len(procs)
    return results


class GovernedProcesses:
    """Two processes share one governor's counters through the store at ``store_url``."""

    async def test_two_processes_admit_exactly_the_calls_limit(self, store_url: str) -> None:
        """Each tries 10 calls against a shared limit of 12 a day: exactly 12 run in all."""
        admitted = await _run_together(*(["calls", store_url, "12", "10"] for _ in range(2)))
        assert sum(int(n) for n in admitted) == 12
        async with open_store(store_url) as stores:
            governor = Governor(store=StoreCounters(stores.counters))
            now = governor.clock.now()
            total = await governor.store.get("llm|calls|day", now=now, seconds=86_400.0)
        assert total == 12.0

    async def test_two_processes_begin_exactly_the_rounds_limit(self, store_url: str) -> None:
        """Each begins 10 tool-call rounds against a shared limit of 12 a day: 12 in all."""
        admitted = await _run_together(*(["rounds", store_url, "12", "10"] for _ in range(2)))
        assert sum(int(n) for n in admitted) == 12
        async with open_store(store_url) as stores:
            governor = Governor(store=StoreCounters(stores.counters))
            now = governor.clock.now()
            total = await governor.store.get("llm|rounds|day", now=now, seconds=86_400.0)
        assert total == 12.0

    async def test_two_processes_stay_within_the_cost_bound(self, store_url: str) -> None:
        """A shared $1 budget, $0.15 a call: spend reaches it, past it by at most one call
        in flight per process (cost is known only once a call is done)."""
        spent = await _run_together(*(["cost", store_url, "1.0", "0.15", "20"] for _ in range(2)))
        total = sum(float(s) for s in spent)
        assert 1.0 <= total <= 1.0 + 2 * 0.15 + 1e-9
        async with open_store(store_url) as stores:
            counted = await StoreCounters(stores.counters).get(
                "llm|cost|day", now=Governor().clock.now(), seconds=86_400.0
            )
        assert abs(counted - total) < 1e-9

    async def test_a_raise_approved_in_one_process_holds_in_the_others(
        self, store_url: str
    ) -> None:
        """A human raises a shared daily limit of 2 calls to 5 in one process; a second
        process, with nobody to ask, then admits calls up to the raised max, not the old."""
        # covers L-24
        [first] = await _run_together(["raise", store_url, "2", "3", "5"])
        assert first == "3"  # 2, then the raise to 5 admitted the third
        [second] = await _run_together(["raise", store_url, "2", "4", "0"])
        assert second == "2"  # 3 of the raised 5 were used: 2 more, without asking anyone
        async with open_store(store_url) as stores:
            counters = StoreCounters(stores.counters)
            now = Governor().clock.now()
            total = await counters.get("llm|calls|day", now=now, seconds=86_400.0)
            raised = await counters.raised_max("llm|calls|day", now=now, seconds=86_400.0)
        assert (total, raised) == (5.0, 5.0)
