"""The counter book of a governor: the store, counter keys, amounts, maxima and mutations.

Every limit counts in one counter per (oracle, type, window), plus the graph or invocation
id for limits with a ``graph`` or ``invocation`` window: :func:`counter_key` is the one
place that formula lives. The book reads and adds amounts (in-memory counters without a
coroutine), knows each limit's max in force (a mutation, or a raise shared by other
processes), remembers which scoped counters a graph or invocation owns, and turns its
counters into snapshot records and back.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bastion.core import Clock

from ._bus import SignalBus
from ._durable import CounterRecord, MutationRecord
from ._plan import BoundLimit, Plan, key_ancestry
from ._store import (
    AtomicLimitCounters,
    CounterRow,
    LimitCounters,
    MemoryLimitCounters,
    SharedLimitStore,
)

__all__ = ["CounterBook", "CounterView", "Mutation", "counter_key"]

Breach = tuple[BoundLimit, float, float, float]
"""A limit an action would pass: the limit, its counter, its max and the action's step."""


def counter_key(bound: BoundLimit, graph: str, invocation: str) -> str:
    """``<oracle>|<type>|<window>``, plus ``|<graph or invocation id>`` for scoped windows."""
    scope = bound.scope
    if scope is None:
        return bound.id
    return f"{bound.id}|{graph if scope == 'graph' else invocation}"


@dataclass(frozen=True, slots=True)
class Mutation:
    """A runtime change of a limit's max (lasts one window length for sliding windows)."""

    max: float
    at: float
    by: str


@dataclass(kw_only=True, slots=True)
class CounterView:
    """One limit's counter as seen by an action (``Governor.counters``)."""

    oracle: str
    type: str
    window: str
    accumulated: float
    max: float
    original_max: float
    window_start: float | None


class CounterBook:
    """Counters, maxima and mutations of one governor's limits."""

    __slots__ = (
        "_bound_by_id",
        "atomic",
        "bus",
        "clock",
        "limits",
        "memory",
        "mutations",
        "scoped",
        "store",
    )

    def __init__(
        self,
        store: LimitCounters,
        clock: Clock,
        bus: SignalBus,
        limits: Mapping[str, Sequence[BoundLimit]],
    ) -> None:
        self.store = store
        self.clock = clock
        self.bus = bus
        # In-memory counters are read and added without a coroutine per counter.
        self.memory = store if type(store) is MemoryLimitCounters else None
        # Shared stores check-and-add ``calls`` in one atomic step when an action is admitted.
        self.atomic = (
            store if self.memory is None and isinstance(store, AtomicLimitCounters) else None
        )
        self.mutations: dict[str, Mutation] = {}
        # Counters of each "graph:<id>" / "invocation:<id>" scope, dropped when it ends.
        self.scoped: dict[str, set[str]] = {}
        self.limits = limits  # by owning oracle key
        self._bound_by_id = {bound.id: bound for bounds in limits.values() for bound in bounds}

    def _track(self, bound: BoundLimit, graph: str, invocation: str) -> str:
        """The counter key of a write; a scoped counter is remembered for ``end_scope``."""
        counter = counter_key(bound, graph, invocation)
        if bound.scope is not None:
            scope_id = graph if bound.scope == "graph" else invocation
            self.scoped.setdefault(f"{bound.scope}:{scope_id}", set()).add(counter)
        return counter

    # -- maxima ---------------------------------------------------------------------------

    def max_of(self, bound: BoundLimit, now: float) -> float:
        """The limit's max in force in this process (a mutation's while it lasts)."""
        mutation = self.mutations.get(bound.id) if self.mutations else None
        if mutation is None:
            return bound.max
        seconds = bound.seconds
        if seconds is not None and now - mutation.at >= seconds:
            del self.mutations[bound.id]  # the window it was granted for has passed
            return bound.max
        return mutation.max

    async def shared_max(self, bound: BoundLimit, now: float) -> float:
        """:meth:`max_of`, or the higher max another process raised the limit to.

        Only mutable, unscoped limits on a :class:`SharedLimitStore` can have one.
        """
        local = self.max_of(bound, now)
        store = self.store
        if bound.scope is None and bound.limit.mutable and isinstance(store, SharedLimitStore):
            shared = await store.raised_max(bound.id, now=now, seconds=bound.seconds)
            if shared is not None and shared > local:
                return shared
        return local

    # -- reading --------------------------------------------------------------------------

    def breach_now(
        self, limits: tuple[BoundLimit, ...], now: float, graph: str, invocation: str, tokens: float
    ) -> Breach | None:
        """The first limit the action would breach, read from in-memory counters."""
        memory = self.memory
        assert memory is not None
        mutated = bool(self.mutations)
        for bound in limits:
            # Unscoped counters (most) are keyed by the limit's id: no call needed.
            counter = bound.id if bound.scope is None else counter_key(bound, graph, invocation)
            current = memory.peek(counter, now)
            maximum = self.max_of(bound, now) if mutated else bound.max
            step = bound.step
            if step is None:
                step = tokens
            if (current + step > maximum) if step else (current >= maximum):
                return bound, current, maximum, step
        return None

    async def breach(
        self, limits: tuple[BoundLimit, ...], now: float, graph: str, invocation: str, tokens: float
    ) -> Breach | None:
        """:meth:`breach_now` for any counter store."""
        if self.memory is not None:
            return self.breach_now(limits, now, graph, invocation, tokens)
        for bound in limits:
            current = await self.store.get(
                counter_key(bound, graph, invocation), now=now, seconds=bound.seconds
            )
            maximum = await self.shared_max(bound, now)
            step = bound.step
            if step is None:
                step = tokens
            if (current + step > maximum) if step else (current >= maximum):
                return bound, current, maximum, step
        return None

    # -- counting -------------------------------------------------------------------------

    def signal_added(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self,
        bound: BoundLimit,
        amount: float,
        total: float,
        now: float,
        graph: str,
        invocation: str,
        key: str,
        node: str,
        breakdown: Mapping[str, float] | None = None,
    ) -> None:
        """Tell the routine listeners that ``amount`` was added (``total`` now)."""
        maximum = self.max_of(bound, now) if self.mutations else bound.max
        self.bus.emit_policy(
            bound, amount, total, maximum, now, graph, invocation, key, node, breakdown
        )

    def add_now(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self,
        bound: BoundLimit,
        amount: float,
        now: float,
        graph: str,
        invocation: str,
        key: str,
        node: str,
        breakdown: Mapping[str, float] | None = None,
    ) -> None:
        """Add ``amount`` to an in-memory counter (no coroutine)."""
        memory = self.memory
        assert memory is not None
        counter = bound.id if bound.scope is None else self._track(bound, graph, invocation)
        total = memory.bump(counter, amount, now, bound.seconds)
        if self.bus.routine:
            self.signal_added(bound, amount, total, now, graph, invocation, key, node, breakdown)

    async def add(  # noqa: PLR0917 - mirrors add_now
        self,
        bound: BoundLimit,
        amount: float,
        now: float,
        graph: str,
        invocation: str,
        key: str,
        node: str,
        breakdown: Mapping[str, float] | None = None,
    ) -> None:
        """Add ``amount`` to the limit's counter in any store."""
        if self.memory is not None:
            self.add_now(bound, amount, now, graph, invocation, key, node, breakdown)
            return
        counter = self._track(bound, graph, invocation)
        total = await self.store.add(counter, amount, now=now, seconds=bound.seconds)
        if self.bus.routine:
            self.signal_added(bound, amount, total, now, graph, invocation, key, node, breakdown)

    def count_calls(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self, plan: Plan, calls: int, now: float, graph: str, invocation: str, node: str
    ) -> None:
        """Count an admitted action's calls on in-memory counters."""
        memory = self.memory
        assert memory is not None
        amount = float(calls)
        for bound in plan.counted:
            if bound.type != "calls":
                continue
            counter = bound.id if bound.scope is None else self._track(bound, graph, invocation)
            total = memory.bump(counter, amount, now, bound.seconds)
            if self.bus.routine:
                self.signal_added(bound, amount, total, now, graph, invocation, plan.key, node)

    async def try_add(
        self, bound: BoundLimit, amount: float, now: float, graph: str, invocation: str
    ) -> tuple[bool, float, float]:
        """Atomically add ``amount`` unless it passes the max; return (added, total, max)."""
        store = self.atomic
        assert store is not None
        maximum = await self.shared_max(bound, now)
        added, total = await store.try_add(
            self._track(bound, graph, invocation),
            amount,
            now=now,
            seconds=bound.seconds,
            maximum=maximum,
        )
        return added, total, maximum

    async def force_add(
        self, bound: BoundLimit, amount: float, now: float, graph: str, invocation: str
    ) -> float:
        """Add ``amount`` whatever the max (an approved interrupt, or giving calls back)."""
        counter = self._track(bound, graph, invocation)
        return await self.store.add(counter, amount, now=now, seconds=bound.seconds)

    # -- inspection, scopes, snapshots ----------------------------------------------------

    async def views(self, key: str, graph: str, invocation: str) -> list[CounterView]:
        """The counters that apply to ``key``, its ancestors' first."""
        now = self.clock.now()
        views: list[CounterView] = []
        bounds = [b for level in key_ancestry(key) for b in self.limits.get(level, ())]
        for bound in bounds:
            counter = counter_key(bound, graph, invocation)
            store = self.store
            views.append(
                CounterView(
                    oracle=bound.oracle,
                    type=bound.type,
                    window=bound.label,
                    accumulated=await store.get(counter, now=now, seconds=bound.seconds),
                    max=self.max_of(bound, now),
                    original_max=bound.max,
                    window_start=await store.window_start(counter, now=now, seconds=bound.seconds),
                )
            )
        return views

    async def end_scope(self, name: str, scope_id: str) -> None:
        """Forget the counters of a finished graph or invocation."""
        keys = self.scoped.pop(f"{name}:{scope_id}", None)
        if keys:
            await self.store.discard(keys)

    async def records(
        self, now: float
    ) -> tuple[tuple[CounterRecord, ...], tuple[MutationRecord, ...]]:
        """Every counter and mutation, as snapshot records."""
        counters: list[CounterRecord] = []
        for row in await self.store.dump(now=now):
            oracle, kind, window, *scope = row.key.split("|", 3)
            bound = self._bound_by_id.get(f"{oracle}|{kind}|{window}")
            counters.append(
                CounterRecord(
                    key=row.key,
                    oracle=oracle,
                    type=kind,
                    window=window,
                    scope=scope[0] if scope else None,
                    accumulated=row.total,
                    max=self.max_of(bound, now) if bound is not None else None,
                    original_max=bound.max if bound is not None else None,
                    window_start=row.events[0][0] if row.events else None,
                    seconds=row.seconds,
                    events=tuple(row.events),
                )
            )
        mutations = tuple(
            MutationRecord(limit=limit_id, max=m.max, at=m.at, by=m.by)
            for limit_id, m in self.mutations.items()
        )
        return tuple(counters), mutations

    async def load(
        self, counters: Iterable[CounterRecord], mutations: Iterable[MutationRecord]
    ) -> None:
        """Load snapshot records (the store decides what it keeps)."""
        counters = tuple(counters)
        await self.store.load(
            [
                CounterRow(key=c.key, seconds=c.seconds, total=c.accumulated, events=list(c.events))
                for c in counters
            ]
        )
        for record in counters:
            if record.scope is not None:
                self.scoped.setdefault(f"{record.window}:{record.scope}", set()).add(record.key)
        for item in mutations:
            self.mutations[item.limit] = Mutation(max=item.max, at=item.at, by=item.by)
