"""Time as the runtime sees it.

Everything that waits (retry backoff, timeouts, time windows) asks a :class:`Clock`, so tests
can substitute ``bastion.testing.VirtualClock`` and never sleep.
"""

from __future__ import annotations

import asyncio
import time
from typing import Protocol, runtime_checkable

__all__ = ["Clock", "SystemClock"]


@runtime_checkable
class Clock(Protocol):
    """A source of time and a way to wait."""

    def now(self) -> float:
        """Return wall-clock time in seconds since the epoch."""
        ...

    def monotonic(self) -> float:
        """Return a monotonic time in seconds, for measuring durations."""
        ...

    async def sleep(self, seconds: float) -> None:
        """Wait for ``seconds``."""
        ...


class SystemClock:
    """The real clock: ``time.time``, ``time.perf_counter`` and ``asyncio.sleep``."""

    def now(self) -> float:
        """Return ``time.time()``."""
        return time.time()

    def monotonic(self) -> float:
        """Return ``time.perf_counter()``."""
        return time.perf_counter()

    async def sleep(self, seconds: float) -> None:
        """Wait with ``asyncio.sleep``."""
        await asyncio.sleep(seconds)
