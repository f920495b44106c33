"""The :class:`Governor`: one gate for every action.

``exec(key, fn)`` = check (policies, then limits) → run (retries, timeout) → accumulate.
``check`` / ``record`` / ``begin_round`` are the same steps split apart, for callers that run
the action themselves (the agent loop around a streamed model call).

The governor is composed of parts it delegates to, each owning its state: a
:class:`~._table.PolicyTable` (configuration and plans), a :class:`~._counters.CounterBook`
(the counter store, counter keys, maxima and mutations), an
:class:`~._desk.InterruptDesk` (pending interrupts, decisions, the handler) and a
:class:`~._bus.SignalBus` (subscribers). This module wires them into the gate.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bastion.core import Clock, SystemClock, UserError

from ._bus import SignalBus
from ._counters import CounterBook, CounterView
from ._desk import InterruptDesk, InterruptHandler, Substitute, new_interrupt_id
from ._durable import GovernorSnapshot, dump_governance_state, load_governance_state
from ._exec import run_counted
from ._guard import Guard
from ._interrupts import Interrupt, InterruptDecision
from ._policy import Budget, Oracle, Policy, PolicyAction
from ._recording import count_usage
from ._resolve import Verdict, resolve_sync
from ._scope import ActionScope
from ._signals import DataListener, SignalListener
from ._store import LimitCounters, MemoryLimitCounters
from ._table import PolicyTable

__all__ = ["Governor"]


class Governor:
    """Resolves policies, counts limits and raises interrupts for every action.

    Args:
        oracles: Oracle key → :class:`Oracle` (or a plain list of policies). A key inherits
            the policies and limits of its ancestors (``llm:a:b`` ← ``llm:a`` ← ``llm``).
        policies: Global custom policies (the top level).
        graph_policies: Custom policies per graph key.
        node_policies: Custom policies per node (agent) name.
        budget: One or more :class:`Budget` shorthands.
        handle_interrupt: ``(interrupt, ctx) -> decision`` (sync or async). Without one an
            interrupt raises :class:`InterruptRequired`.
        interrupt_timeout: Seconds the handler may take; past it the action is denied.
        clock: Time source for windows, timeouts and backoff.
        store: Where counters live (in memory by default).

    Raises:
        UserError: For an invalid key, policy or limit.
    """

    def __init__(
        self,
        *,
        oracles: Mapping[str, Oracle | Sequence[Policy]] | None = None,
        policies: Sequence[Policy] = (),
        graph_policies: Mapping[str, Sequence[Policy]] | None = None,
        node_policies: Mapping[str, Sequence[Policy]] | None = None,
        budget: Budget | Sequence[Budget] | None = None,
        handle_interrupt: InterruptHandler | None = None,
        interrupt_timeout: float | None = 120.0,
        clock: Clock | None = None,
        store: LimitCounters | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.store: LimitCounters = store if store is not None else MemoryLimitCounters()
        table = PolicyTable(
            oracles=oracles or {},
            policies=policies,
            graph_policies=graph_policies or {},
            node_policies=node_policies or {},
            budgets=[budget] if isinstance(budget, Budget) else list(budget or ()),
        )
        self._wire(table, handle_interrupt, interrupt_timeout)

    def _wire(
        self, table: PolicyTable, handler: InterruptHandler | None, timeout: float | None
    ) -> None:
        """Build the parts around ``table``, ``self.store`` and ``self.clock``."""
        self._table = table
        self._plans = table.plans  # read directly: a cached plan costs no call
        self._bus = SignalBus()
        self._book = CounterBook(self.store, self.clock, self._bus, table.limits)
        self._desk = InterruptDesk(self, self._book, handler, timeout)
        self._ids = itertools.count(1)
        self._guard = Guard(self._book, self._desk, self._ids)

    def fork(self, *, store: LimitCounters, clock: Clock) -> Governor:
        """A governor with these policies and limits, counting in ``store`` on ``clock``.

        It shares nothing else: its mutations, pending interrupts, decisions and
        subscribers start empty. A host that runs each run in its own context (a Temporal
        workflow) gives each run one, on counters every process shares.
        """
        twin = Governor.__new__(Governor)
        twin.clock, twin.store = clock, store
        twin._wire(self._table, self._desk.handler, self._desk.timeout)
        twin.max_interrupt_rounds = self.max_interrupt_rounds
        return twin

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

    # -- the gate -----------------------------------------------------------------------

    async def check(
        self,
        key: str,
        *,
        input: Any = None,
        node: str = "",
        graph: str = "",
        invocation: str = "",
        node_id: str = "",
        ancestry: Sequence[str] = (),
        history: Sequence[str] = (),
        target: str | None = None,
        tokens: float = 0.0,
        calls: int = 0,
    ) -> Substitute | None:
        """Resolve policies and check limits before an action on ``key``.

        Returns ``None`` when the action may run, or a :class:`Substitute` when an interrupt
        decision supplied its result (do not run the action then). With ``calls`` the
        admitted action's calls are counted at once (``record(key, calls=...)`` fused in),
        for callers that must count an action before the next one is checked.

        Args:
            key: The action's oracle key.
            input: What the action works on (given to custom policies).
            node: The acting node (agent) name.
            graph: The graph execution id (scope of ``graph`` windows).
            invocation: The invocation (run) id (scope of ``invocation`` windows).
            node_id: The node execution id.
            ancestry: Node keys from the root to the acting node's parent.
            history: Keys done before, for policies that look back.
            target: The node this action would start (spawn, handoff).
            tokens: Tokens the action is known to add, checked against ``context`` limits.
            calls: Calls to count once the action is admitted (not with a substitute).

        Raises:
            Denied: A policy or decision refused the action.
            PolicyExceeded: A non-mutable limit is used up.
            InterruptRequired: An interrupt needs a decision and no handler is configured.
        """
        plan = self._plans.get((key, node, graph)) or self._table.plan(key, node, graph)
        approved = False
        if self._desk.decided:
            outcome = self._desk.take(key, node)
            if isinstance(outcome, Substitute):
                return outcome
            approved = outcome is True
        book = self._book
        asked: tuple[Verdict | None] | None = None  # the sync policies' verdict, once asked
        if not plan.policies:
            if not plan.counted:
                return None
            clear = True
        elif plan.all_sync:
            # Sync policies are asked here, before any scope object is built.
            action = PolicyAction(
                node=node,
                oracle=key,
                input=input,
                history=history,
                ancestry=ancestry,
                target=target,
                timestamp=self.clock.now(),
                invocation_id=invocation,
                graph_id=graph,
                node_id=node_id,
                oracle_id=self._guard.new_action_id(),
            )
            asked = (resolve_sync(plan, action),)
            clear = asked[0] is None  # every policy allowed: the limits alone decide
            if clear and not plan.counted:
                return None
        else:
            clear = False
        if clear and book.memory is not None:
            now = self.clock.now()
            if book.breach_now(plan.counted, now, graph, invocation, tokens) is None:
                # Nothing near a limit: no resolution loop needed.
                if calls:
                    book.count_calls(plan, calls, now, graph, invocation, node)
                return None
        scope = ActionScope(
            node=node,
            graph=graph,
            invocation=invocation,
            node_id=node_id,
            ancestry=ancestry,
            history=history,
            target=target,
            input=input,
        )
        substitute = await self._guard.judge(
            plan,
            plan.counted,
            scope,
            approved=approved,
            tokens=tokens,
            asked=asked,
        )
        if substitute is not None or not calls:
            return substitute
        counted = tuple(bound for bound in plan.counted if bound.type == "calls")
        if book.atomic is not None:
            return await self._guard.reserve(plan, counted, float(calls), scope)
        now = self.clock.now()
        for bound in counted:
            await book.add(bound, float(calls), now, graph, invocation, key, node)
        return None

    async def begin_round(
        self, key: str, *, node: str = "", graph: str = "", invocation: str = ""
    ) -> None:
        """Count one tool-call round on ``key`` against its ``rounds`` limits.

        Call it before running the tools a model response asked for: with ``rounds`` max
        N exactly N rounds run, and the (N+1)-th raises :class:`PolicyExceeded` (or an
        interrupt, when the limit is mutable).
        """
        plan = self._plans.get((key, node, graph)) or self._table.plan(key, node, graph)
        rounds = plan.rounds
        if not rounds:
            return
        book = self._book
        if book.atomic is not None:  # shared counters: check-and-add in one step per limit
            scope = ActionScope(node=node, graph=graph, invocation=invocation)
            await self._guard.reserve(plan, rounds, 1.0, scope)
            return
        now = self.clock.now()
        if book.memory is None or book.breach_now(rounds, now, graph, invocation, 0.0):
            scope = ActionScope(node=node, graph=graph, invocation=invocation)
            await self._guard.judge(plan, rounds, scope, approved=False, tokens=0.0, policies=False)
            now = self.clock.now()
        for bound in rounds:
            if book.memory is not None:
                book.add_now(bound, 1.0, now, graph, invocation, plan.key, node)
            else:
                await book.add(bound, 1.0, now, graph, invocation, plan.key, node)

    # -- after the action ---------------------------------------------------------------

    async def record(
        self,
        key: str,
        result: Any = None,
        *,
        usage: Any = None,
        cost: float | None = None,
        tokens: float | None = None,
        counters: Mapping[str, float] | None = None,
        calls: int = 1,
        node: str = "",
        graph: str = "",
        invocation: str = "",
    ) -> None:
        """Accumulate what an action on ``key`` consumed into every counted limit.

        Amounts come from the limit's ``extract(result)`` when it has one, else from the
        arguments: ``usage`` (a :class:`bastion.core.Usage`; found on ``result`` or
        ``result.usage`` when omitted) gives cost (``cost_usd``) and tokens
        (``total_tokens``); ``cost`` and ``tokens`` override it; ``counters`` feeds ``x:*``.

        Raises:
            BudgetUnpriced: A cost limit must count usage that has no price.
        """
        plan = self._plans.get((key, node, graph)) or self._table.plan(key, node, graph)
        if not plan.counted:
            return
        book = self._book
        pending = count_usage(
            book, plan, result, usage, cost, tokens, counters, calls, node, graph, invocation
        )
        if pending:  # a store that needs awaiting
            now = self.clock.now()
            for bound, amount, breakdown in pending:
                await book.add(bound, amount, now, graph, invocation, key, node, breakdown)

    # -- the whole action ---------------------------------------------------------------

    async def exec(
        self,
        key: str,
        fn: Callable[[], Any] | None = None,
        *,
        input: Any = None,
        node: str = "",
        graph: str = "",
        invocation: str = "",
        node_id: str = "",
        ancestry: Sequence[str] = (),
        history: Sequence[str] = (),
        target: str | None = None,
    ) -> Any:
        """Run ``fn()`` (or the oracle's executor with ``input``) through the gate.

        Check → run (with the nearest ``retries`` and ``timeout`` limits) → accumulate. A
        sync ``fn`` runs inline; an async one is awaited.

        Raises:
            UserError: No ``fn`` and no executor registered for ``key`` or its ancestors.
            Denied: A policy or decision refused the action; ``fn`` did not run.
            PolicyExceeded: A non-mutable limit is used up; ``fn`` did not run.
            InterruptRequired: An interrupt needs a decision and no handler is configured.
            ActionTimeout: ``fn`` ran past its ``timeout`` limit.
        """
        plan = self._plans.get((key, node, graph)) or self._table.plan(key, node, graph)
        if fn is None:
            executor = plan.executor
            if executor is None:
                raise UserError(
                    f"No function given and no executor registered for {key!r} or its "
                    "ancestors: pass fn= or register Oracle(executor=...)."
                )
            fn = lambda: executor(input)  # noqa: E731
        # Shared stores count the call when it is admitted (atomically), not when done.
        calls = 1 if self._book.atomic is None else 0
        substitute = await self.check(
            key,
            input=input,
            node=node,
            graph=graph,
            invocation=invocation,
            node_id=node_id,
            ancestry=ancestry,
            history=history,
            target=target,
            calls=1 - calls,
        )
        if substitute is not None:
            return substitute.value
        if self._bus.routine:
            scope = ActionScope(
                node=node,
                graph=graph,
                invocation=invocation,
                node_id=node_id,
                ancestry=ancestry,
                history=history,
                target=target,
                input=input,
            )
            action_id = self._guard.new_action_id()
        elif not plan.counted and plan.retries is None and plan.timeout is None:
            result = fn()  # nothing to count or tell: just run it
            return (await result) if hasattr(result, "__await__") else result
        else:
            scope, action_id = None, ""
        return await run_counted(
            self._book, plan, fn, calls, scope, action_id, (node, graph, invocation)
        )

    async def interrupt(
        self,
        key: str,
        payload: Any = None,
        *,
        reason: str = "",
        input: Any = None,
        node: str = "",
        graph: str = "",
        invocation: str = "",
        node_id: str = "",
        ancestry: Sequence[str] = (),
    ) -> Substitute | None:
        """Raise an interrupt for work on ``key`` that asked for a decision itself.

        The handler decides as for a policy's interrupt: ``None`` means retry the work, a
        :class:`Substitute` carries the result to use instead.

        Raises:
            Denied: The handler denied it, failed or took too long.
            InterruptRequired: No handler: the interrupt is kept as pending.
        """
        taken = self._desk.take(key, node)  # decided while suspended (a resumed graph)
        if taken is not None:
            return taken if isinstance(taken, Substitute) else None
        interrupt = Interrupt(
            id=new_interrupt_id(),
            kind="policy",
            action=key,
            oracle=key,
            node=node,
            reason=reason or f"{key} asks for a decision",
            payload=payload,
        )
        scope = ActionScope(
            node=node,
            graph=graph,
            invocation=invocation,
            node_id=node_id,
            ancestry=ancestry,
            input=input,
        )
        return await self._desk.resolve(interrupt, key, scope)

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
