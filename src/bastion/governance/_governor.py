"""The :class:`Governor`: one gate for every action an agent takes.

``exec(key, fn)`` = check (policies, then limits) → run (retries, timeout) → accumulate.
``check`` / ``record`` / ``begin_round`` are the same steps split apart, for callers that run
the action themselves (the agent loop around a streamed model call). Interrupts, mutations,
snapshots and signals live in :mod:`._interrupting`, :mod:`._state` and :mod:`._signalling`;
this module wires them.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from bastion.core import Clock, SystemClock, UserError

from ._accumulate import amount_for, find_usage
from ._interrupting import InterruptHandler, Interrupting, Substitute
from ._interrupts import BudgetUnpriced, Denied, Interrupt, PolicyExceeded
from ._plan import BoundLimit, Plan, build_plan, key_ancestry, normalize_policies
from ._policy import ALLOW, Budget, CustomPolicy, Oracle, Policy, PolicyAction, PolicyResult
from ._run import run_action
from ._signalling import Signalling
from ._signals import (
    DeniedSignal,
    ExceededSignal,
    ExecInSignal,
    ExecOutSignal,
)
from ._state import StateMixin
from ._store import AtomicCounterStore, CounterStore, MemoryCounterStore

__all__ = ["Governor"]


class _Interrupted(Exception):
    def __init__(self, interrupt: Interrupt) -> None:
        self.interrupt = interrupt


class Governor(Signalling, Interrupting, StateMixin):
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
        store: CounterStore | None = None,
    ) -> None:
        self.clock: Clock = clock if clock is not None else SystemClock()
        self.store: CounterStore = store if store is not None else MemoryCounterStore()
        # In-memory counters are read and added without a coroutine per counter.
        self._memory = self.store if type(self.store) is MemoryCounterStore else None
        # Shared stores check-and-add ``calls`` in one atomic step when an action is admitted.
        self._atomic = (
            self.store
            if self._memory is None and isinstance(self.store, AtomicCounterStore)
            else None
        )
        self.handle_interrupt = handle_interrupt
        self.interrupt_timeout = interrupt_timeout
        self._init_signalling()
        self._ids = itertools.count(1)
        self._plans: dict[tuple[str, str, str], Plan] = {}
        self._oracles: dict[str, Oracle] = {}
        self._oracle_policies: dict[str, list[CustomPolicy]] = {}
        self._oracle_limits: dict[str, list[BoundLimit]] = {}
        for key, spec in (oracles or {}).items():
            oracle = spec if isinstance(spec, Oracle) else Oracle(policies=list(spec))
            self._add_oracle(key, oracle)
        budgets = [budget] if isinstance(budget, Budget) else list(budget or ())
        for item in budgets:
            self._add_oracle(item.oracle, Oracle(policies=[item.limit()]))
        self._global = self._custom_only(policies, "policies")
        self._graph_policies = {
            k: self._custom_only(v, f"graph_policies[{k!r}]")
            for k, v in (graph_policies or {}).items()
        }
        self._node_policies = {
            k: self._custom_only(v, f"node_policies[{k!r}]")
            for k, v in (node_policies or {}).items()
        }
        self._init_interrupting()
        self._init_state()

    @property
    def counts_on_check(self) -> bool:
        """True when ``calls`` are counted as actions are admitted, atomically.

        The store is an :class:`AtomicCounterStore` (shared by processes): pass the calls to
        :meth:`check` (``calls=1``) and ``calls=0`` to :meth:`record`, so processes sharing a
        ``calls`` limit together admit exactly its maximum. :meth:`exec` does so itself.
        """
        return self._atomic is not None

    # -- configuration ------------------------------------------------------------------

    def _add_oracle(self, key: str, oracle: Oracle) -> None:
        key_ancestry(key)
        custom, limits = normalize_policies(oracle.policies, where=f"oracle {key!r}")
        self._oracle_policies.setdefault(key, []).extend(custom)
        bound = self._oracle_limits.setdefault(key, [])
        for limit in limits:
            limit_id = f"{key}|{limit.type}|{limit.parsed_window.label}"
            if any(b.id == limit_id for b in bound):
                raise UserError(
                    f"Oracle {key!r} has two {limit.type!r} limits with window "
                    f"{limit.parsed_window.label!r}; keep one."
                )
            bound.append(BoundLimit(oracle=key, limit=limit, id=limit_id))
        previous = self._oracles.get(key)
        if previous is None or oracle.executor is not None:
            self._oracles[key] = oracle

    @staticmethod
    def _custom_only(policies: Sequence[Policy], where: str) -> list[CustomPolicy]:
        custom, limits = normalize_policies(policies, where=where)
        if limits:
            raise UserError(
                f"Limits belong to oracles, not to {where}: move {limits[0].type!r} to an "
                "oracle key (e.g. oracles={'llm': [...]})."
            )
        return custom

    def _plan(self, key: str, node: str, graph: str) -> Plan:
        plan = self._plans.get((key, node, graph))
        if plan is None:
            plan = self._plans[key, node, graph] = build_plan(
                key,
                node=node,
                graph=graph,
                global_policies=self._global,
                graph_policies=self._graph_policies,
                node_policies=self._node_policies,
                oracle_policies=self._oracle_policies,
                oracle_limits=self._oracle_limits,
                oracles=self._oracles,
            )
        return plan

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
        plan = self._plan(key, node, graph)
        approved = False
        if self._decided:
            outcome = self._take_decision(key, node)
            if outcome is not None:
                if isinstance(outcome, Substitute):
                    return outcome
                approved = True
        if not plan.policies:
            if not plan.counted:
                return None
            if self._memory is not None:
                now = self.clock.now()
                if self._breach_now(plan.counted, now, graph, invocation, tokens) is None:
                    # Nothing near a limit: no resolution loop needed.
                    if calls:
                        self._count_calls(plan, calls, now, graph, invocation, node)
                    return None
        scope = (node, graph, invocation, node_id, ancestry, history, target, input)
        substitute = await self._guard(
            plan, plan.counted, approved=approved, scope=scope, tokens=tokens
        )
        if substitute is None and calls and self._atomic is not None:
            counted = tuple(bound for bound in plan.counted if bound.type == "calls")
            return await self._reserve(self._atomic, plan, counted, float(calls), scope)
        if substitute is None and calls:
            now = self.clock.now()
            for bound in plan.counted:
                if bound.type == "calls":
                    await self._add(
                        bound,
                        float(calls),
                        now=now,
                        graph=graph,
                        invocation=invocation,
                        key=key,
                        node=node,
                        breakdown=None,
                    )
        return substitute

    async def _reserve(
        self,
        store: AtomicCounterStore,
        plan: Plan,
        bounds: tuple[BoundLimit, ...],
        amount: float,
        scope: tuple[Any, ...],
    ) -> Substitute | None:
        """Count an admitted action with one atomic check-and-add per limit in ``bounds``.

        ``bounds`` are its ``calls`` limits, or its ``rounds`` limits when a round begins.

        When another process took the last calls since the check, the limit is checked
        again (it raises, or interrupts when mutable) and the count retried; a limit still
        full raises :class:`PolicyExceeded`, and the calls reserved for other limits are
        given back. An approved interrupt on a mutable limit counts past it, as in memory.
        """
        node, graph, invocation = scope[0], scope[1], scope[2]
        now = self.clock.now()
        reserved: list[tuple[str, float | None]] = []
        try:
            for bound in bounds:
                counter = bound.id
                if bound.scope is not None:
                    scope_id = graph if bound.scope == "graph" else invocation
                    counter = f"{counter}|{scope_id}"
                    self._scoped.setdefault(f"{bound.scope}:{scope_id}", set()).add(counter)
                maximum = await self._shared_max(bound, now)
                added, total = await store.try_add(
                    counter, amount, now=now, seconds=bound.seconds, maximum=maximum
                )
                if not added:
                    substitute = await self._guard(
                        plan, (bound,), approved=False, scope=scope, tokens=0.0, policies=False
                    )
                    if substitute is not None:
                        await self._give_back(store, reserved, amount, now)
                        return substitute
                    maximum = await self._shared_max(bound, now)
                    added, total = await store.try_add(
                        counter, amount, now=now, seconds=bound.seconds, maximum=maximum
                    )
                    if not added and not bound.limit.mutable:
                        raise PolicyExceeded(
                            oracle=bound.oracle,
                            limit_type=bound.type,
                            window=bound.label,
                            current=total,
                            max=maximum,
                        )
                    if not added:  # an interrupt on the mutable limit approved the call
                        total = await store.add(counter, amount, now=now, seconds=bound.seconds)
                reserved.append((counter, bound.seconds))
                if self._routine:
                    self._emit_policy(
                        bound, amount, total, now, graph, invocation, plan.key, node, None
                    )
        except BaseException:
            await self._give_back(store, reserved, amount, now)
            raise
        return None

    @staticmethod
    async def _give_back(
        store: AtomicCounterStore,
        reserved: list[tuple[str, float | None]],
        amount: float,
        now: float,
    ) -> None:
        for counter, seconds in reserved:
            await store.add(counter, -amount, now=now, seconds=seconds)
        reserved.clear()

    def _count_calls(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self, plan: Plan, calls: int, now: float, graph: str, invocation: str, node: str
    ) -> None:
        """``record(calls=...)`` for in-memory counters, right after a passed check."""
        memory = self._memory
        assert memory is not None
        for bound in plan.counted:
            if bound.type != "calls":
                continue
            scope = bound.scope
            if scope is None:
                counter = bound.id
            else:
                scope_id = graph if scope == "graph" else invocation
                counter = f"{bound.id}|{scope_id}"
                self._scoped.setdefault(f"{scope}:{scope_id}", set()).add(counter)
            total = memory.bump(counter, float(calls), now, bound.seconds)
            if self._routine:
                self._emit_policy(
                    bound, float(calls), total, now, graph, invocation, plan.key, node, None
                )

    async def begin_round(
        self, key: str, *, node: str = "", graph: str = "", invocation: str = ""
    ) -> None:
        """Count one tool-call round on ``key`` against its ``rounds`` limits.

        Call it before running the tools a model response asked for: with ``rounds`` max
        N exactly N rounds run, and the (N+1)-th raises :class:`PolicyExceeded` (or an
        interrupt, when the limit is mutable).
        """
        plan = self._plan(key, node, graph)
        rounds = plan.rounds
        if not rounds:
            return
        now = self.clock.now()
        atomic = self._atomic
        if atomic is not None:  # shared counters: check-and-add in one step per limit
            scope = (node, graph, invocation, "", (), (), None, None)
            await self._reserve(atomic, plan, rounds, 1.0, scope)
            return
        if self._memory is None or self._breach_now(rounds, now, graph, invocation, 0.0):
            await self._guard(
                plan,
                rounds,
                approved=False,
                scope=(node, graph, invocation, "", (), (), None, None),
                tokens=0.0,
                policies=False,
            )
            now = self.clock.now()
        for bound in rounds:
            await self._add(
                bound,
                1.0,
                now=now,
                graph=graph,
                invocation=invocation,
                key=plan.key,
                node=node,
                breakdown=None,
            )

    async def _guard(
        self,
        plan: Plan,
        limits: tuple[BoundLimit, ...],
        *,
        approved: bool,
        scope: tuple[Any, ...],
        tokens: float,
        policies: bool = True,
    ) -> Substitute | None:
        node, graph, invocation, node_id, ancestry, history, target, input_ = scope
        for _ in range(self.max_interrupt_rounds):
            now = self.clock.now()
            try:
                if policies and plan.policies:
                    action = PolicyAction(
                        node=node,
                        oracle=plan.key,
                        input=input_,
                        history=history,
                        ancestry=ancestry,
                        target=target,
                        timestamp=now,
                        invocation_id=invocation,
                        graph_id=graph,
                        node_id=node_id,
                        oracle_id=f"act_{next(self._ids)}",
                    )
                    if plan.all_sync:
                        verdict = self._resolve_sync(plan, action)
                    else:
                        verdict = await self._resolve_async(plan, action)
                    if verdict is not None:
                        self._apply_verdict(
                            plan, verdict, node=node, approved=approved, now=now, scope=scope
                        )
                if limits:
                    await self._check_limits(plan, limits, now, scope, tokens)
                return None
            except _Interrupted as exc:
                outcome = await self._resolve_interrupt(exc.interrupt, plan.key, scope)
                if isinstance(outcome, Substitute):
                    return outcome
                approved = True
        raise Denied(
            f"Still interrupted after {self.max_interrupt_rounds} decisions; giving up.",
            oracle=plan.key,
            node=node,
        )

    @staticmethod
    def _resolve_sync(plan: Plan, action: PolicyAction) -> tuple[PolicyResult, int, bool] | None:
        # Bubbling picks the lowest decisive result, i.e. the last one seen top-down, so
        # one pass does both phases and nothing is stored.
        decisive: PolicyResult | None = None
        decisive_at = 0
        index = 0
        for policy in plan.policies:
            action.policy_id = policy.id
            result = policy.fn(action)
            if result is None or result is ALLOW:
                index += 1
                continue
            if not isinstance(result, PolicyResult):
                raise UserError(
                    f"Policy {policy.id!r} returned {result!r}; declare it `async def` if it "
                    "awaits, and return allow(), deny(reason) or interrupt(payload)."
                )
            if result.force:
                return result, index, True
            if result.stop or result.approval != "allow":
                decisive, decisive_at = result, index
            index += 1
        return None if decisive is None else (decisive, decisive_at, False)

    @staticmethod
    async def _resolve_async(
        plan: Plan, action: PolicyAction
    ) -> tuple[PolicyResult, int, bool] | None:
        results: list[PolicyResult] = []
        for index, policy in enumerate(plan.policies):
            action.policy_id = policy.id
            result: Any = policy.fn(action)
            if not isinstance(result, PolicyResult) and result is not None:
                result = await result
            if result is None:
                result = ALLOW
            if not isinstance(result, PolicyResult):
                raise UserError(f"Policy {policy.id!r} returned {result!r}, not a PolicyResult.")
            if result.force:
                return result, index, True
            results.append(result)
        for index in range(len(results) - 1, -1, -1):
            result = results[index]
            if result.approval != "allow" or result.stop:
                return result, index, False
        return None

    def _apply_verdict(
        self,
        plan: Plan,
        verdict: tuple[PolicyResult, int, bool],
        *,
        node: str,
        approved: bool,
        now: float,
        scope: tuple[Any, ...],
    ) -> None:
        result, index, forced = verdict
        if result.approval == "allow":
            return
        policy = plan.policies[index]
        if result.approval == "deny":
            if self._listeners:
                self._emit(
                    DeniedSignal(
                        **self._scope_fields(plan.key, scope, now),
                        reason=result.reason,
                        policy_id=policy.id,
                        forced=forced,
                    )
                )
            raise Denied(result.reason or f"denied by {policy.id}", oracle=plan.key, node=node)
        if approved:  # a decision already answered this policy's interrupt
            return
        raise _Interrupted(
            Interrupt(
                id=self._new_interrupt_id(),
                kind="policy",
                action=plan.key,
                oracle=plan.levels[index],
                node=node,
                reason=result.reason or f"policy {policy.id} asks for a decision",
                payload=result.payload,
            )
        )

    def _breach_now(
        self,
        limits: tuple[BoundLimit, ...],
        now: float,
        graph: str,
        invocation: str,
        tokens: float,
    ) -> tuple[BoundLimit, float, float, float] | None:
        """The first limit the action would breach, read from in-memory counters."""
        memory = self._memory
        assert memory is not None
        mutated = bool(self._mutations)
        for bound in limits:
            scope = bound.scope
            counter = (
                bound.id
                if scope is None
                else f"{bound.id}|{graph if scope == 'graph' else invocation}"
            )
            current = memory.peek(counter, now)
            maximum = self._max(bound, now) if mutated else bound.max
            step = bound.step
            if step is None:
                step = tokens
            if (current + step > maximum) if step else (current >= maximum):
                return bound, current, maximum, step
        return None

    async def _breach(
        self,
        limits: tuple[BoundLimit, ...],
        now: float,
        graph: str,
        invocation: str,
        tokens: float,
    ) -> tuple[BoundLimit, float, float, float] | None:
        """:meth:`_breach_now` for any counter store."""
        if self._memory is not None:
            return self._breach_now(limits, now, graph, invocation, tokens)
        store = self.store
        for bound in limits:
            scope = bound.scope
            counter = (
                bound.id
                if scope is None
                else f"{bound.id}|{graph if scope == 'graph' else invocation}"
            )
            current = await store.get(counter, now=now, seconds=bound.seconds)
            maximum = await self._shared_max(bound, now)
            step = bound.step
            if step is None:
                step = tokens
            if (current + step > maximum) if step else (current >= maximum):
                return bound, current, maximum, step
        return None

    async def _check_limits(
        self,
        plan: Plan,
        limits: tuple[BoundLimit, ...],
        now: float,
        scope: tuple[Any, ...],
        tokens: float,
    ) -> None:
        breach = await self._breach(limits, now, scope[1], scope[2], tokens)
        if breach is None:
            return
        bound, current, maximum, step = breach
        limit = bound.limit
        kind = bound.type
        label = bound.label
        mutable = bool(limit.mutable)
        if self._listeners:
            self._emit(
                ExceededSignal(
                    **self._scope_fields(plan.key, scope, now),
                    oracle=bound.oracle,
                    limit_type=kind,
                    window=label,
                    current=current,
                    max=maximum,
                    mutable=mutable,
                )
            )
        if not mutable:
            raise PolicyExceeded(
                oracle=bound.oracle,
                limit_type=kind,
                window=label,
                current=current,
                max=maximum,
            )
        raise _Interrupted(
            Interrupt(
                id=self._new_interrupt_id(),
                kind="limit",
                action=plan.key,
                oracle=bound.oracle,
                node=scope[0],
                limit_type=kind,
                window=label,
                current=current,
                max=maximum,
                proposed=current + step,
                approvers=tuple(limit.mutable or ()),
                reason=(
                    f"{kind} limit on {bound.oracle!r} reached: {current:g} of "
                    f"{maximum:g} ({label})"
                ),
            )
        )

    def counts_results(self, key: str, *, node: str = "", graph: str = "") -> bool:
        """True when a limit on ``key`` (or an ancestor) reads results with an ``extract``.

        Without one, ``record(key, result, calls=0)`` of a result that carries no usage
        counts nothing, and callers may skip it.
        """
        return bool(self._plan(key, node, graph).extracting)

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
        """
        plan = self._plan(key, node, graph)
        bounds = plan.counted
        if not bounds:
            return
        if usage is None:
            usage = find_usage(result)
            if (
                usage is None
                and calls == 0
                and cost is None
                and tokens is None
                and counters is None
            ):
                bounds = plan.extracting  # only a limit's extract can count anything
                if not bounds:
                    return
        if usage is not None and cost is None and usage.cost_usd is None:
            _check_priced(bounds, key, usage)
        now = self.clock.now()
        memory = self._memory
        for bound in bounds:
            kind = bound.type
            if kind == "calls" and calls >= 0:
                amount, breakdown = float(calls), None
            elif (
                kind == "cost"
                and usage is not None
                and cost is None
                and not usage.cost_usd
                and bound.limit.extract is None
            ):
                continue  # a free call adds nothing
            else:
                amount, breakdown = amount_for(
                    bound.limit,
                    result,
                    usage=usage,
                    cost=cost,
                    tokens=tokens,
                    counters=counters,
                    calls=calls,
                )
            if not amount:
                continue
            if memory is not None and bound.scope is None:  # the common case, inline
                total = memory.bump(bound.id, amount, now, bound.seconds)
                if self._routine:
                    self._emit_policy(
                        bound, amount, total, now, graph, invocation, key, node, breakdown
                    )
                continue
            await self._add(
                bound,
                amount,
                now=now,
                graph=graph,
                invocation=invocation,
                key=key,
                node=node,
                breakdown=breakdown,
            )

    async def _add(
        self,
        bound: BoundLimit,
        amount: float,
        *,
        now: float,
        graph: str,
        invocation: str,
        key: str,
        node: str,
        breakdown: Mapping[str, float] | None,
    ) -> None:
        counter = bound.id
        scope = bound.scope
        if scope is not None:
            scope_id = graph if scope == "graph" else invocation
            counter = f"{counter}|{scope_id}"
            self._scoped.setdefault(f"{scope}:{scope_id}", set()).add(counter)
        memory = self._memory
        if memory is not None:
            total = memory.bump(counter, amount, now, bound.seconds)
        else:
            total = await self.store.add(counter, amount, now=now, seconds=bound.seconds)
        if self._routine:
            self._emit_policy(bound, amount, total, now, graph, invocation, key, node, breakdown)

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
        plan = self._plan(key, node, graph)
        if fn is None:
            executor = plan.executor
            if executor is None:
                raise UserError(
                    f"No function given and no executor registered for {key!r} or its "
                    "ancestors: pass fn= or register Oracle(executor=...)."
                )
            fn = lambda: executor(input)  # noqa: E731
        # Shared stores count the call when it is admitted (atomically), not when done.
        calls = 1 if self._atomic is None else 0
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
        listening = bool(self._routine)
        action_id = f"act_{next(self._ids)}" if listening else ""
        scope = (node, graph, invocation, node_id, ancestry, history, target, input)
        if listening:
            self._emit(
                ExecInSignal(
                    **self._scope_fields(key, scope, self.clock.now()), action_id=action_id
                ),
                routine=True,
            )
        started = self.clock.monotonic()
        attempts = 1
        result: Any = None
        failure: Exception | None = None
        try:
            if plan.retries is None and plan.timeout is None:
                result = fn()
                if hasattr(result, "__await__"):
                    result = await result
            else:
                result, attempts = await run_action(
                    fn, clock=self.clock, oracle=key, retries=plan.retries, timeout=plan.timeout
                )
        except Exception as exc:
            failure = exc
        if plan.counted:
            await self.record(
                key, result, calls=calls, node=node, graph=graph, invocation=invocation
            )
        if listening:
            self._emit(
                ExecOutSignal(
                    **self._scope_fields(key, scope, self.clock.now()),
                    action_id=action_id,
                    duration=self.clock.monotonic() - started,
                    attempts=attempts,
                    error=None if failure is None else type(failure).__name__,
                ),
                routine=True,
            )
        if failure is not None:
            raise failure
        return result


def _check_priced(bounds: Sequence[BoundLimit], key: str, usage: Any) -> None:
    """Refuse usage with no price where a cost limit must count it (``unpriced="fail"``).

    Usage that reports nothing at all (no tokens, no requests) is a call that did not happen
    and costs nothing.
    """
    if not (usage.total_tokens or usage.requests or usage.unreported_requests):
        return
    for bound in bounds:
        limit = bound.limit
        if bound.type == "cost" and limit.extract is None and limit.unpriced == "fail":
            raise BudgetUnpriced(oracle=key, max=limit.max, window=str(limit.window), usage=usage)
