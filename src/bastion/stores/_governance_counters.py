"""The governor's counters kept in a store's :class:`CounterStore` (shared by processes).

:class:`StoreCounters` adapts ``stores.counters`` (PostgreSQL, Redis, SQLite, memory) to the
governor's :class:`bastion.governance.AtomicLimitCounters`. Windows are *fixed buckets* aligned
to their length: a counter's bucket is ``floor(now / seconds)``, stored as the
``window_start`` of the row (a ``day`` budget starts afresh at 00:00 UTC). Counters without a
span (``graph``, ``invocation`` and unbounded windows) use ``window_start=0``.
"""

from __future__ import annotations

import math
from collections.abc import Collection, Sequence

from bastion.core import Clock, SystemClock
from bastion.governance import CounterRow

from ._protocols import CounterStore

__all__ = ["StoreCounters"]


_RAISED = "raised-max|"  # counter key prefix of a limit's shared raised max


def _bucket(now: float, seconds: float | None) -> int:
    return 0 if seconds is None else math.floor(now / seconds)


class StoreCounters:
    """Governor counters in a :class:`CounterStore`, in fixed windows.

    ``Governor(store=StoreCounters(stores.counters))`` shares its counters with every process
    using the same store: increments are atomic, and ``calls`` are counted with one atomic
    check-and-add (:meth:`try_add`) as actions are admitted, so processes sharing a ``calls``
    limit together admit exactly its maximum. The store must stay open while the governor
    is used.

    It also shares raised limits (:class:`bastion.governance.SharedLimitStore`): a human's
    ``mutate`` decision in one process raises the limit for every process until the end of
    the window's current bucket.

    Unlike the in-memory sliding windows, a window here is a fixed bucket: everything
    counted in a bucket is forgotten at once when the next bucket starts (a ``day`` limit
    resets at 00:00 UTC, a ``minute`` limit on the minute), so up to twice the maximum can
    pass within one window length that straddles a boundary.

    Args:
        counters: The store's counters (``stores.counters``).
        clock: The governor's clock, for :meth:`load` (the system clock by default).
    """

    __slots__ = ("_clock", "_counters", "_seen")

    def __init__(self, counters: CounterStore, *, clock: Clock | None = None) -> None:
        self._counters = counters
        self._clock: Clock = clock if clock is not None else SystemClock()
        # The counters this governor touched, with their span: what dump() reports.
        self._seen: dict[str, float | None] = {}

    async def get(self, key: str, *, now: float, seconds: float | None) -> float:
        """Return the sum for ``key`` in the bucket holding ``now``."""
        return await self._counters.get(key, window_start=_bucket(now, seconds))

    async def add(self, key: str, amount: float, *, now: float, seconds: float | None) -> float:
        """Atomically add ``amount`` to the bucket holding ``now``; return the new sum."""
        self._seen[key] = seconds
        return await self._counters.add(key, amount, window_start=_bucket(now, seconds))

    async def try_add(
        self, key: str, amount: float, *, now: float, seconds: float | None, maximum: float
    ) -> tuple[bool, float]:
        """Add ``amount`` only if the bucket's sum stays ``<= maximum``, atomically."""
        self._seen[key] = seconds
        result = await self._counters.try_add(
            key, amount, maximum=maximum, window_start=_bucket(now, seconds)
        )
        return result.accepted, result.value

    async def window_start(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """Return when the bucket holding ``now`` started, or ``None`` when it is empty."""
        if seconds is None:
            return None
        bucket = _bucket(now, seconds)
        if not await self._counters.get(key, window_start=bucket):
            return None
        return bucket * seconds

    async def raised_max(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """Return the max a limit was raised to in the bucket holding ``now``, if any.

        A raise lasts until the end of the bucket it was granted in, as the counts do.
        """
        value = await self._counters.get(_RAISED + key, window_start=_bucket(now, seconds))
        return value or None

    async def raise_max(
        self, key: str, maximum: float, *, now: float, seconds: float | None
    ) -> float:
        """Raise the limit's shared max to at least ``maximum``; return the max in force.

        The stored value only grows, with atomic check-and-adds: of two processes raising
        at once, the higher raise holds (a lower one is already exceeded and changes nothing).
        """
        bucket = _bucket(now, seconds)
        name = _RAISED + key
        while True:
            current = await self._counters.get(name, window_start=bucket)
            if current >= maximum:
                return current
            result = await self._counters.try_add(
                name, maximum - current, maximum=maximum, window_start=bucket
            )
            if result.accepted:
                return maximum

    async def discard(self, keys: Collection[str]) -> None:
        """Delete the counters (every bucket) of ``keys`` from the store."""
        for key in keys:
            self._seen.pop(key, None)
            await self._counters.reset(key)

    async def dump(self, *, now: float) -> list[CounterRow]:
        """Return the non-empty counters this adapter has touched (no per-event detail)."""
        rows: list[CounterRow] = []
        for key, seconds in self._seen.items():
            total = await self.get(key, now=now, seconds=seconds)
            if total:
                rows.append(CounterRow(key=key, seconds=seconds, total=total))
        return rows

    async def load(self, rows: Sequence[CounterRow]) -> None:
        """Fill counters the store does not hold yet from a snapshot's rows.

        The shared store is authoritative: a counter it already holds (another process, or
        the one that took the snapshot, kept counting) is left as it is, so a restore never
        counts an amount twice. Amounts load into the current bucket.
        """
        now = self._clock.now()
        for row in rows:
            self._seen[row.key] = row.seconds
            bucket = _bucket(now, row.seconds)
            if row.total and not await self._counters.get(row.key, window_start=bucket):
                await self._counters.add(row.key, row.total, window_start=bucket)
