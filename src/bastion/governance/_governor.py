"""The :class:`Governor`: one gate for every action.

``exec(key, fn)`` = check (policies, then limits) → run (retries, timeout) → accumulate.
``check`` / ``record`` / ``begin_round`` are the same steps split apart, for callers that run
the action themselves (the agent loop around a streamed model call).

The governor is composed of parts it delegates to, each owning its state (``_parts.py``
wires nothing: it says what the governor exposes of them). This module builds the parts and
wires them into the gate.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bastion.core import Clock, SystemClock, UserError

from ._bus import SignalBus
from ._counters import CounterBook
from ._desk import InterruptDesk, InterruptHandler, Substitute, new_interrupt_id
from ._exec import run_counted
from ._guard import Guard
from ._interrupts import Interrupt
from ._parts import GovernorParts
from ._plan import Plan
from ._policy import Budget, Oracle, Policy, PolicyAction
from ._recording import count_usage
from ._resolve import Verdict, resolve_sync
from ._scope import ActionScope
from ._store import LimitCounters, MemoryLimitCounters
from ._table import PolicyTable

__all__ = ["Governor"]


class Governor(GovernorParts):
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
        outcome = self._desk.take(key, node) if self._desk.decided else None
        if isinstance(outcome, Substitute):
            return outcome
        asked: tuple[Verdict | None] | None = None  # the sync policies' verdict, once asked
        if plan.policies and plan.all_sync:  # asked before any scope object is built
            at = (node, graph, invocation, node_id)
            asked = (self._ask_sync(plan, key, input, at, ancestry, history, target),)
        # No policy, or every policy allowed: the limits alone decide.
        clear = not plan.policies or (asked is not None and asked[0] is None)
        if clear and (
            not plan.counted
            or self._far(
                plan, graph=graph, invocation=invocation, tokens=tokens, calls=calls, node=node
            )
        ):
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
            plan, plan.counted, scope, approved=outcome is True, tokens=tokens, asked=asked
        )
        if substitute is not None or not calls:
            return substitute
        return await self._count_admitted(plan, key, calls, scope)

    def _ask_sync(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self,
        plan: Plan,
        key: str,
        input: Any,
        at: tuple[str, str, str, str],
        ancestry: Sequence[str],
        history: Sequence[str],
        target: str | None,
    ) -> Verdict | None:
        """The verdict of ``plan``'s sync policies (``at``: node, graph, invocation, node id)."""
        node, graph, invocation, node_id = at
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
        return resolve_sync(plan, action)

    def _far(
        self, plan: Plan, *, graph: str, invocation: str, tokens: float, calls: int, node: str
    ) -> bool:
        """True when in-memory counters are nowhere near a limit (no resolution loop needed).

        The admitted action's ``calls`` are counted then.
        """
        book = self._book
        if book.memory is None:
            return False
        now = self.clock.now()
        if book.breach_now(plan.counted, now, graph, invocation, tokens) is not None:
            return False
        if calls:
            book.count_calls(plan, calls, now, graph, invocation, node)
        return True

    async def _count_admitted(
        self, plan: Plan, key: str, calls: int, scope: ActionScope
    ) -> Substitute | None:
        """Count an admitted action's ``calls`` against its ``calls`` limits."""
        book = self._book
        counted = tuple(bound for bound in plan.counted if bound.type == "calls")
        if book.atomic is not None:
            return await self._guard.reserve(plan, counted, float(calls), scope)
        now = self.clock.now()
        for bound in counted:
            await book.add(bound, float(calls), now, scope.graph, scope.invocation, key, scope.node)
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
