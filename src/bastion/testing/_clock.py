"""``VirtualClock``: time that moves only when the test says so, or when something sleeps."""

from __future__ import annotations

import asyncio
import heapq
import itertools
import time

__all__ = ["LaterClock", "VirtualClock"]


class VirtualClock:
    """A :class:`bastion.core.Clock` for tests: nothing really sleeps.

    With ``auto_advance=True`` (default) a ``sleep(d)`` moves time forward by ``d`` at once
    and returns after one turn of the event loop; every sleep is recorded in
    :attr:`sleeps`. With ``auto_advance=False`` sleepers wait until :meth:`advance` moves
    time past their deadline.
    """

    def __init__(self, start: float = 1_700_000_000.0, *, auto_advance: bool = True) -> None:
        self._now = start
        self._origin = start
        self.auto_advance = auto_advance
        self.sleeps: list[float] = []
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._watchers: list[tuple[int, asyncio.Future[None]]] = []
        self._order = itertools.count()

    def now(self) -> float:
        """Virtual wall-clock time."""
        return self._now

    def monotonic(self) -> float:
        """Virtual seconds since the clock was made."""
        return self._now - self._origin

    async def sleep(self, seconds: float) -> None:
        """Record the sleep and let virtual time pass."""
        self.sleeps.append(seconds)
        if self.auto_advance:
            self.advance(max(seconds, 0.0))
            await asyncio.sleep(0)
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (self._now + seconds, next(self._order), future))
        if seconds <= 0:
            self.advance(0.0)
        else:
            self._notify_watchers()
        await future

    def advance(self, seconds: float) -> None:
        """Move time forward and wake every sleeper whose deadline has come."""
        if seconds < 0:
            raise ValueError(f"Cannot move a clock backwards (advance({seconds!r})).")
        self._now += seconds
        while self._waiters and self._waiters[0][0] <= self._now:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)

    @property
    def pending(self) -> int:
        """How many sleepers wait."""
        return sum(1 for _, _, f in self._waiters if not f.done())

    async def wait_for_sleepers(self, count: int = 1) -> None:
        """Return once at least ``count`` sleepers wait: a sync point for tests, with no polling.

        With ``auto_advance=False`` a test starts the code under test, awaits this, and only
        then moves time, so the advance cannot come before the sleep it is meant to end.
        """
        if self.pending >= count:
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._watchers.append((count, future))
        try:
            await future
        finally:
            self._watchers = [(n, f) for n, f in self._watchers if f is not future]

    def _notify_watchers(self) -> None:
        if not self._watchers:
            return
        pending = self.pending
        for count, future in self._watchers:
            if count <= pending and not future.done():
                future.set_result(None)


class LaterClock:
    """The system clock read ``seconds`` ahead: a process that starts that much later.

    For crash tests: a worker resuming with ``Agent(clock=LaterClock(store.lease_ttl + 1))``
    sees the leases of a killed process as expired, as a process started after their time
    to live would, without the test waiting for it.
    """

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def now(self) -> float:
        """Wall-clock time, ``seconds`` ahead."""
        return time.time() + self.seconds

    def monotonic(self) -> float:
        """The real monotonic clock (durations are unchanged)."""
        return time.monotonic()

    async def sleep(self, seconds: float) -> None:
        """Really sleep."""
        await asyncio.sleep(seconds)
