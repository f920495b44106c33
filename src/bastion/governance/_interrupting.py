"""Interrupt resolution and limit mutation, mixed into :class:`Governor`.

A handler's decision applies at once; without a handler the interrupt is kept as *pending*
(it is part of the snapshot) and :class:`InterruptRequired` propagates. ``decide`` records
the decision; the next ``check`` of the same action and node consumes it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from bastion.core import Clock, UserError, new_id

from ._interrupts import (
    ActionTimeout,
    Denied,
    DenyDecision,
    Interrupt,
    InterruptDecision,
    InterruptRequired,
    MutateDecision,
    MutationRefused,
    ResultDecision,
    RetryDecision,
    decision_from_dict,
)
from ._plan import BoundLimit
from ._run import with_deadline
from ._signals import (
    DeniedSignal,
    GovernanceSignal,
    InterruptInSignal,
    InterruptOutSignal,
    MutationSignal,
    SignalListener,
)
from ._store import CounterStore, SharedLimitStore

if TYPE_CHECKING:
    from ._governor import Governor

__all__ = ["InterruptContext", "InterruptHandler", "Interrupting", "Substitute"]


@dataclass(slots=True)
class Substitute:
    """An interrupt decision supplied the action's result: use ``value``, do not run it."""

    value: Any


@dataclass(kw_only=True, slots=True)
class InterruptContext:
    """What an interrupt handler knows about the paused action."""

    governor: Governor
    key: str
    node: str
    input: Any
    invocation_id: str
    graph_id: str
    ancestry: tuple[str, ...]


InterruptHandler: TypeAlias = Callable[
    [Interrupt, InterruptContext], "InterruptDecision | Awaitable[InterruptDecision]"
]


@dataclass(kw_only=True, slots=True)
class Mutation:
    """A runtime change of a limit's max (lasts one window length for sliding windows)."""

    max: float
    at: float
    by: str


class Interrupting:
    """Pending interrupts, decisions and mutations of a governor."""

    clock: Clock
    store: CounterStore
    handle_interrupt: InterruptHandler | None
    interrupt_timeout: float | None
    max_interrupt_rounds: int = 20
    _listeners: list[SignalListener]
    _oracle_limits: dict[str, list[BoundLimit]]

    def _emit(self, signal: GovernanceSignal) -> None: ...

    def _init_interrupting(self) -> None:
        self._pending: dict[str, Interrupt] = {}
        self._decided: dict[tuple[str, str], InterruptDecision] = {}
        self._mutations: dict[str, Mutation] = {}

    @staticmethod
    def _new_interrupt_id() -> str:
        return new_id("int")

    def _max(self, bound: BoundLimit, now: float) -> float:
        if not self._mutations:
            return bound.limit.max
        mutation = self._mutations.get(bound.id)
        if mutation is None:
            return bound.limit.max
        seconds = bound.limit.parsed_window.seconds
        if seconds is not None and now - mutation.at >= seconds:
            del self._mutations[bound.id]  # the window it was granted for has passed
            return bound.limit.max
        return mutation.max

    async def _shared_max(self, bound: BoundLimit, now: float) -> float:
        """:meth:`_max`, or the higher max another process raised the limit to.

        Only mutable, unscoped limits on a :class:`SharedLimitStore` can have one.
        """
        local = self._max(bound, now)
        store = self.store
        if bound.scope is None and bound.limit.mutable and isinstance(store, SharedLimitStore):
            shared = await store.raised_max(bound.id, now=now, seconds=bound.seconds)
            if shared is not None and shared > local:
                return shared
        return local

    def pending(self) -> list[Interrupt]:
        """Return the interrupts waiting for :meth:`decide`, oldest first."""
        return list(self._pending.values())

    async def decide(
        self, interrupt_id: str, decision: InterruptDecision | Mapping[str, Any]
    ) -> None:
        """Answer a pending interrupt; the next check of the same action consumes it.

        Raises:
            UserError: No pending interrupt has that id.
            MutationRefused: A mutate past the ceiling or by someone not allowed; the
                interrupt stays pending.
        """
        interrupt = self._pending.get(interrupt_id)
        if interrupt is None:
            known = ", ".join(repr(i) for i in self._pending) or "none"
            raise UserError(f"No pending interrupt {interrupt_id!r}. Pending: {known}.")
        if isinstance(decision, Mapping):
            decision = decision_from_dict(decision)
        if isinstance(decision, MutateDecision):
            await self._mutate(decision, interrupt)
        del self._pending[interrupt_id]
        self._decided[interrupt.action, interrupt.node] = decision
        if self._listeners:
            self._emit(
                InterruptOutSignal(
                    key=interrupt.action,
                    node=interrupt.node,
                    timestamp=self.clock.now(),
                    interrupt_id=interrupt.id,
                    decision=decision.decision,
                    reason=decision.reason if isinstance(decision, DenyDecision) else "",
                )
            )

    def _take_decision(self, key: str, node: str) -> Substitute | bool | None:
        decision = self._decided.pop((key, node), None)
        if decision is None:
            return None
        if isinstance(decision, DenyDecision):
            raise Denied(decision.reason or "denied by decision", oracle=key, node=node)
        if isinstance(decision, ResultDecision):
            return Substitute(decision.value)
        return True

    async def _resolve_interrupt(
        self, interrupt: Interrupt, key: str, scope: tuple[Any, ...]
    ) -> Substitute | None:
        node, graph, invocation = scope[0], scope[1], scope[2]
        listening = bool(self._listeners)
        if listening:
            self._emit(
                InterruptInSignal(
                    key=key,
                    node=node,
                    graph_id=graph,
                    invocation_id=invocation,
                    timestamp=self.clock.now(),
                    interrupt=interrupt.to_dict(),
                )
            )
        handler = self.handle_interrupt
        if handler is None:
            self._pending[interrupt.id] = interrupt
            raise InterruptRequired(interrupt)
        context = InterruptContext(
            governor=self,  # pyright: ignore[reportArgumentType]
            key=key,
            node=node,
            input=scope[7],
            invocation_id=invocation,
            graph_id=graph,
            ancestry=tuple(scope[4]),
        )
        try:
            decision = await self._ask(handler, interrupt, context, key)
        except (Exception, ActionTimeout) as exc:
            self._out(interrupt, key, scope, "error", repr(exc))
            raise Denied(f"interrupt handler failed: {exc!r}", oracle=key, node=node) from exc
        if isinstance(decision, MutateDecision):
            try:
                await self._mutate(decision, interrupt, scope)
            except MutationRefused as exc:
                self._out(interrupt, key, scope, "deny", exc.reason)
                raise
            self._out(interrupt, key, scope, "mutate", "")
            return None
        self._out(interrupt, key, scope, decision.decision, getattr(decision, "reason", ""))
        if isinstance(decision, RetryDecision):
            return None
        if isinstance(decision, ResultDecision):
            return Substitute(decision.value)
        if listening:
            self._emit(
                DeniedSignal(
                    key=key,
                    node=node,
                    graph_id=graph,
                    invocation_id=invocation,
                    timestamp=self.clock.now(),
                    reason=decision.reason,
                )
            )
        raise Denied(decision.reason or "denied by interrupt handler", oracle=key, node=node)

    async def _ask(
        self,
        handler: InterruptHandler,
        interrupt: Interrupt,
        context: InterruptContext,
        key: str,
    ) -> InterruptDecision:
        async def call() -> Any:
            answer = handler(interrupt, context)
            if inspect.isawaitable(answer):
                return await answer
            return answer

        if self.interrupt_timeout is None:
            decision = await call()
        else:
            decision = await with_deadline(self.clock, self.interrupt_timeout, call, oracle=key)
        if isinstance(decision, Mapping):
            return decision_from_dict(decision)  # pyright: ignore[reportUnknownArgumentType]
        if not isinstance(decision, RetryDecision | DenyDecision | ResultDecision | MutateDecision):
            raise UserError(f"An interrupt handler returned {decision!r}, not a decision.")
        return decision

    def _out(
        self, interrupt: Interrupt, key: str, scope: tuple[Any, ...], decision: str, reason: str
    ) -> None:
        if self._listeners:
            self._emit(
                InterruptOutSignal(
                    key=key,
                    node=scope[0],
                    graph_id=scope[1],
                    invocation_id=scope[2],
                    timestamp=self.clock.now(),
                    interrupt_id=interrupt.id,
                    decision=decision,
                    reason=reason,
                )
            )

    def _find_limit(self, decision: MutateDecision, interrupt: Interrupt | None) -> BoundLimit:
        window = decision.window
        if (
            window is None
            and interrupt is not None
            and interrupt.oracle == decision.oracle
            and interrupt.limit_type == decision.limit_type
        ):
            window = interrupt.window
        candidates: Sequence[BoundLimit] = [
            bound
            for bound in self._oracle_limits.get(decision.oracle, ())
            if bound.limit.type == decision.limit_type
            and (window is None or bound.limit.parsed_window.label == window)
        ]
        if not candidates:
            raise MutationRefused(
                f"No {decision.limit_type!r} limit (window {window!r}) on {decision.oracle!r}.",
                oracle=decision.oracle,
                limit_type=decision.limit_type,
                requested=decision.max,
            )
        return candidates[0]

    async def _mutate(
        self,
        decision: MutateDecision,
        interrupt: Interrupt | None,
        scope: tuple[Any, ...] | None = None,
    ) -> None:
        bound = self._find_limit(decision, interrupt)
        now = self.clock.now()
        limit = bound.limit
        previous = await self._shared_max(bound, now)
        rules = dict(limit.mutable or {})
        window = limit.parsed_window
        counter = bound.id
        if window.scope is not None:
            counter = None  # scoped counters: the interrupt carries the current value
        if interrupt is not None and interrupt.current is not None:
            current = interrupt.current
        elif counter is not None:
            current = await self.store.get(counter, now=now, seconds=window.seconds)
        else:
            current = 0.0
        approver = ""
        accepted = False
        if decision.approver is not None:
            rule = rules.get(decision.approver)
            if rule is not None:
                approver = decision.approver
                accepted = rule(decision.max, current, previous) if callable(rule) else rule
        else:
            for name, rule in rules.items():
                if rule(decision.max, current, previous) if callable(rule) else rule:
                    approver, accepted = name, True
                    break
        if self._listeners:
            self._emit(
                MutationSignal(
                    key=interrupt.action if interrupt is not None else bound.oracle,
                    node=interrupt.node if interrupt is not None else "",
                    graph_id=scope[1] if scope is not None else "",
                    invocation_id=scope[2] if scope is not None else "",
                    timestamp=now,
                    oracle=bound.oracle,
                    limit_type=limit.type,
                    window=window.label,
                    previous_max=previous,
                    new_max=decision.max if accepted else previous,
                    approved_by=approver or (decision.approver or ""),
                    accepted=accepted,
                )
            )
        if not accepted:
            who = repr(decision.approver) if decision.approver else "any approver"
            names = ", ".join(repr(n) for n in rules) or "nobody"
            raise MutationRefused(
                f"Raising {limit.type} on {bound.oracle!r} to {decision.max:g} was refused "
                f"({who}; allowed approvers: {names}; current max {previous:g}).",
                oracle=bound.oracle,
                limit_type=limit.type,
                requested=decision.max,
                node=interrupt.node if interrupt is not None else "",
            )
        self._mutations[bound.id] = Mutation(max=decision.max, at=now, by=approver)
        if window.scope is None and isinstance(self.store, SharedLimitStore):
            # Every process sharing the counters sees the raise, not only this one.
            await self.store.raise_max(bound.id, decision.max, now=now, seconds=window.seconds)
