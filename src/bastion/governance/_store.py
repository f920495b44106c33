"""Where limit counters live: the :class:`LimitCounters` protocol and its in-memory store.

The governor owns the keys (``"<oracle>|<type>|<window>[|<scope id>]"``) and the clock;
a store only sums amounts over a sliding span. ``add`` must be atomic (read-modify-write in
one step, returning the new total) so that stores shared by many processes (PostgreSQL,
Redis) count every action exactly once.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Protocol, runtime_checkable

from ._windows import SlidingCounter

__all__ = [
    "AtomicLimitCounters",
    "CounterRow",
    "LimitCounters",
    "MemoryLimitCounters",
    "SharedLimitStore",
]


@dataclass(kw_only=True, slots=True)
class CounterRow:
    """One counter as stored, for snapshots.

    Attributes:
        key: The counter key.
        seconds: The sliding span, or ``None`` for a counter that never forgets.
        total: The sum inside the span when the row was taken.
        events: ``(timestamp, amount)`` pairs still inside the span, oldest first (empty for
            counters without a span).
    """

    key: str
    seconds: float | None
    total: float
    events: list[tuple[float, float]] = field(default_factory=list)


@runtime_checkable
class LimitCounters(Protocol):
    """Sums of amounts per key over a sliding span of time: where a governor counts.

    Not to be confused with :class:`bastion.stores.CounterStore`, a store backend's plain
    counters per window bucket; ``bastion.stores.StoreCounters`` adapts one to this.
    """

    async def get(self, key: str, *, now: float, seconds: float | None) -> float:
        """Return the sum for ``key`` within ``seconds`` before ``now`` (0 when unknown)."""
        ...

    async def add(self, key: str, amount: float, *, now: float, seconds: float | None) -> float:
        """Atomically add ``amount`` at ``now`` and return the new sum within the span."""
        ...

    async def window_start(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """Return the time of the oldest amount still counted, or ``None``."""
        ...

    async def discard(self, keys: Collection[str]) -> None:
        """Forget the given counters (end of a graph or an invocation)."""
        ...

    async def dump(self, *, now: float) -> list[CounterRow]:
        """Return every non-empty counter."""
        ...

    async def load(self, rows: Sequence[CounterRow]) -> None:
        """Replace the given counters with the rows' contents."""
        ...


@runtime_checkable
class AtomicLimitCounters(LimitCounters, Protocol):
    """:class:`LimitCounters` that can also check-and-add in one atomic step.

    Stores shared by several processes implement it: the governor then counts ``calls``
    when it admits an action, with :meth:`try_add` bounded by the limit, so processes
    spending against one limit together admit exactly ``max`` calls.
    """

    async def try_add(
        self, key: str, amount: float, *, now: float, seconds: float | None, maximum: float
    ) -> tuple[bool, float]:
        """Add ``amount`` only if the sum stays ``<= maximum``; return (added, sum)."""
        ...


@runtime_checkable
class SharedLimitStore(Protocol):
    """A counter store that also shares raised limits between the processes using it.

    When a human raises a mutable limit (a ``mutate`` decision) in one process, every
    process checking that limit sees the raised max until the window it was granted in
    ends. Raises combine as a maximum: of two raises in one window, the higher holds.
    """

    async def raised_max(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """Return the max a limit was raised to in the window holding ``now``, if any."""
        ...

    async def raise_max(
        self, key: str, maximum: float, *, now: float, seconds: float | None
    ) -> float:
        """Raise the limit's shared max to at least ``maximum``; return the max in force."""
        ...


class MemoryLimitCounters:
    """Counters in this process's memory: exact sliding sums, one deque per counter."""

    __slots__ = ("_counters",)

    def __init__(self) -> None:
        self._counters: dict[str, SlidingCounter] = {}

    async def get(self, key: str, *, now: float, seconds: float | None) -> float:
        """Return the sum for ``key`` in its span."""
        return self.peek(key, now)

    async def add(self, key: str, amount: float, *, now: float, seconds: float | None) -> float:
        """Add ``amount`` at ``now``; return the new sum (atomic: no await inside)."""
        return self.bump(key, amount, now, seconds)

    def peek(self, key: str, now: float) -> float:
        """:meth:`get` without a coroutine: the governor's hot path for in-memory counters."""
        counter = self._counters.get(key)
        if counter is None:
            return 0.0
        events = counter.events
        if events and counter.seconds is not None and events[0][0] <= now - counter.seconds:
            counter.prune(now)  # only when something has left the window
        return counter.total

    def bump(self, key: str, amount: float, now: float, seconds: float | None) -> float:
        """:meth:`add` without a coroutine: the governor's hot path for in-memory counters."""
        counter = self._counters.get(key)
        if counter is None:
            counter = self._counters[key] = SlidingCounter(seconds)
        return counter.add(amount, now)

    async def window_start(self, key: str, *, now: float, seconds: float | None) -> float | None:
        """Return the time of the oldest counted amount."""
        counter = self._counters.get(key)
        return None if counter is None else counter.start(now)

    async def discard(self, keys: Collection[str]) -> None:
        """Forget ``keys``."""
        for key in keys:
            self._counters.pop(key, None)

    async def dump(self, *, now: float) -> list[CounterRow]:
        """Return every counter that still holds something."""
        rows: list[CounterRow] = []
        for key, counter in self._counters.items():
            total = counter.value(now)
            if total == 0.0 and not counter.events:
                continue
            rows.append(
                CounterRow(
                    key=key, seconds=counter.seconds, total=total, events=list(counter.events)
                )
            )
        return rows

    async def load(self, rows: Sequence[CounterRow]) -> None:
        """Replace counters with the rows."""
        for row in rows:
            counter = SlidingCounter(row.seconds)
            if row.seconds is None:
                counter.total = row.total
            else:
                counter.events.extend((float(t), float(a)) for t, a in row.events)
                counter.total = sum(a for _, a in counter.events)
            self._counters[row.key] = counter
