"""``GovernorParts``: the parts a :class:`~bastion.governance.Governor` is composed of.

Each part owns its state: a :class:`~._table.PolicyTable` (configuration and plans), a
:class:`~._counters.CounterBook` (the counter store, counter keys, maxima and mutations), an
:class:`~._desk.InterruptDesk` (pending interrupts, decisions, the handler) and a
:class:`~._bus.SignalBus` (subscribers). This base says what the governor exposes of them:
its configuration, signals, pending interrupts and decisions, counters and snapshots. The
gate itself is in ``_governor.py``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bastion.core import Clock, UserError

from ._bus import SignalBus
from ._counters import CounterBook, CounterView
from ._desk import InterruptDesk, InterruptHandler
from ._durable import GovernorSnapshot, dump_governance_state, load_governance_state
from ._interrupts import Interrupt, InterruptDecision
from ._policy import Policy
from ._signals import DataListener, SignalListener
from ._store import LimitCounters
from ._table import PolicyTable

__all__ = ["GovernorParts"]


class GovernorParts:
    """A governor's parts and what it exposes of them (built by ``Governor._wire``)."""

    clock: Clock
    store: LimitCounters
    _table: PolicyTable
    _bus: SignalBus
    _book: CounterBook
    _desk: InterruptDesk

    # -- configuration held by the parts --------------------------------------------------

    @property
    def handle_interrupt(self) -> InterruptHandler | None:
        """The interrupt handler (``None``: interrupts raise :class:`InterruptRequired`)."""
        return self._desk.handler

    @handle_interrupt.setter
    def handle_interrupt(self, handler: InterruptHandler | None) -> None:
        self._desk.handler = handler

    @property
    def interrupt_timeout(self) -> float | None:
        """Seconds a handler may take before the action is denied."""
        return self._desk.timeout

    @interrupt_timeout.setter
    def interrupt_timeout(self, seconds: float | None) -> None:
        self._desk.timeout = seconds

    @property
    def max_interrupt_rounds(self) -> int:
        """Decisions one action may go through before it is denied (20)."""
        return self._desk.max_rounds

    @max_interrupt_rounds.setter
    def max_interrupt_rounds(self, rounds: int) -> None:
        self._desk.max_rounds = rounds

    @property
    def counts_on_check(self) -> bool:
        """True when ``calls`` are counted as actions are admitted, atomically.

        The store is an :class:`AtomicLimitCounters` (shared by processes): pass the calls
        to :meth:`check` (``calls=1``) and ``calls=0`` to :meth:`record`, so processes
        sharing a ``calls`` limit together admit exactly its maximum. :meth:`exec` does so.
        """
        return self._book.atomic is not None

    def counts_results(self, key: str, *, node: str = "", graph: str = "") -> bool:
        """True when a limit on ``key`` (or an ancestor) reads results with an ``extract``.

        Without one, ``record(key, result, calls=0)`` of a result that carries no usage
        counts nothing, and callers may skip it.
        """
        return bool(self._table.plan(key, node, graph).extracting)

    def add_policies(
        self,
        *,
        graph_policies: Mapping[str, Sequence[Policy]] | None = None,
        node_policies: Mapping[str, Sequence[Policy]] | None = None,
    ) -> None:
        """Add custom policies at the graph and node levels (a graph does, when it runs).

        A policy already present at that level is not added twice.

        Raises:
            UserError: For a limit (limits belong to oracles) or a value that is no policy.
        """
        self._table.extend(graph_policies=graph_policies or {}, node_policies=node_policies or {})

    def has_level_policies(self) -> bool:
        """Whether any global, graph or node custom policy is configured.

        A graph reads it: such a policy may bound its cycles.
        """
        return self._table.has_level_policies()

    # -- signals ------------------------------------------------------------------------

    def subscribe(self, listener: SignalListener, *, routine: bool = True) -> Callable[[], None]:
        """Call ``listener`` with every signal from now on; return a function that stops it.

        With ``routine=False`` it gets the decisions only: denials, breaches, interrupts and
        mutations, not the routine ``oracle.exec.in/out`` and ``oracle.policy.<oracle>``
        signals every allowed action produces.
        """
        return self._bus.subscribe(listener, routine=routine)

    def subscribe_data(self, listener: DataListener, *, routine: bool = True) -> Callable[[], None]:
        """Call ``listener(name, data)`` with every signal from now on, as JSON-ready data.

        ``data`` is what :func:`signal_data` returns for the typed signal; treat it as
        read-only (it may be shared by several data listeners). Cheaper than
        :meth:`subscribe` when nobody needs the typed objects. ``routine`` as for
        :meth:`subscribe`. Return a function that stops it.
        """
        return self._bus.subscribe_data(listener, routine=routine)

    # -- interrupts -----------------------------------------------------------------------

    def pending(self) -> list[Interrupt]:
        """Return the interrupts waiting for :meth:`decide`, oldest first."""
        return list(self._desk.pending.values())

    async def decide(
        self, interrupt_id: str, decision: InterruptDecision | Mapping[str, Any]
    ) -> None:
        """Answer a pending interrupt; the next check of the same action consumes it.

        Raises:
            UserError: No pending interrupt has that id.
            MutationRefused: A mutate past the ceiling or by someone not allowed; the
                interrupt stays pending.
        """
        await self._desk.decide(interrupt_id, decision)

    # -- state ----------------------------------------------------------------------------

    async def counters(
        self, key: str, *, graph: str = "", invocation: str = ""
    ) -> list[CounterView]:
        """Return the counters that apply to ``key``, its ancestors' first."""
        return await self._book.views(key, graph, invocation)

    async def end_scope(self, *, graph: str | None = None, invocation: str | None = None) -> None:
        """Forget the ``graph``- or ``invocation``-window counters of a finished scope."""
        if graph is not None:
            await self._book.end_scope("graph", graph)
            if "#" in graph:  # a graph execution: its plans are of no further use
                self._table.forget(graph)
        if invocation is not None:
            await self._book.end_scope("invocation", invocation)

    async def snapshot_state(self) -> GovernorSnapshot:
        """Return every counter, mutation, pending interrupt and decision, typed."""
        now = self.clock.now()
        counters, mutations = await self._book.records(now)
        pending, decided = self._desk.records()
        return GovernorSnapshot(
            taken_at=now, counters=counters, mutations=mutations, pending=pending, decided=decided
        )

    async def snapshot(self) -> dict[str, Any]:
        """Return :meth:`snapshot_state` as JSON-ready data."""
        return dump_governance_state(await self.snapshot_state())

    async def restore(self, snapshot: GovernorSnapshot | Mapping[str, Any]) -> None:
        """Load a snapshot (typed, or its data, possibly after a JSON round trip).

        Snapshots written by earlier versions (plain dicts) load too.

        Raises:
            UserError: For data that is not a snapshot, or a snapshot of an unknown version.
        """
        if not isinstance(snapshot, GovernorSnapshot):
            loaded = load_governance_state(snapshot)
            if not isinstance(loaded, GovernorSnapshot):
                raise UserError(f"Not a governance snapshot: {type(loaded).__name__}.")
            snapshot = loaded
        await self._book.load(snapshot.counters, snapshot.mutations)
        self._desk.load(snapshot.pending, snapshot.decided)
