"""The interrupt desk of a governor: pending interrupts, decisions, and the handler.

A handler's decision applies at once; without a handler the interrupt is kept as *pending*
(it is part of the snapshot) and :class:`InterruptRequired` propagates. ``decide`` records
the decision; the next check of the same action and node takes it.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeAlias

from bastion.core import UserError, new_id

from ._counters import CounterBook
from ._durable import DecidedInterrupt
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
from ._mutate import apply_mutation
from ._run import with_deadline
from ._scope import ActionScope
from ._signals import DeniedSignal, InterruptInSignal, InterruptOutSignal

if TYPE_CHECKING:
    from ._governor import Governor

__all__ = ["InterruptContext", "InterruptDesk", "InterruptHandler", "Substitute"]


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


def _where(key: str, scope: ActionScope, now: float) -> dict[str, Any]:
    """The fields of an interrupt's signals (no node id or ancestry: they carry the id)."""
    return {
        "key": key,
        "node": scope.node,
        "graph_id": scope.graph,
        "invocation_id": scope.invocation,
        "timestamp": now,
    }


def new_interrupt_id() -> str:
    """A fresh interrupt id."""
    return new_id("int")


class InterruptDesk:
    """Interrupts waiting for a decision, decisions waiting for their action, the handler."""

    __slots__ = ("book", "decided", "handler", "max_rounds", "owner", "pending", "timeout")

    def __init__(
        self,
        owner: Governor,
        book: CounterBook,
        handler: InterruptHandler | None,
        timeout: float | None,
    ) -> None:
        self.owner = owner  # handed to handlers in their InterruptContext
        self.book = book  # mutations change its maxima
        self.handler = handler
        self.timeout = timeout
        self.max_rounds = 20
        self.pending: dict[str, Interrupt] = {}
        self.decided: dict[tuple[str, str], InterruptDecision] = {}

    async def decide(
        self, interrupt_id: str, decision: InterruptDecision | Mapping[str, Any]
    ) -> None:
        """Answer a pending interrupt; the next check of the same action takes it."""
        interrupt = self.pending.get(interrupt_id)
        if interrupt is None:
            known = ", ".join(repr(i) for i in self.pending) or "none"
            raise UserError(f"No pending interrupt {interrupt_id!r}. Pending: {known}.")
        if isinstance(decision, Mapping):
            decision = decision_from_dict(decision)
        if isinstance(decision, MutateDecision):
            await apply_mutation(self.book, decision, interrupt)
        del self.pending[interrupt_id]
        self.decided[interrupt.action, interrupt.node] = decision
        reason = decision.reason if isinstance(decision, DenyDecision) else ""
        self._out(
            interrupt, interrupt.action, ActionScope(node=interrupt.node), decision.decision, reason
        )

    def take(self, key: str, node: str) -> Substitute | bool | None:
        """The decision waiting for this action: a substitute, True (approved) or None.

        Raises:
            Denied: The decision refused the action.
        """
        decision = self.decided.pop((key, node), None)
        if decision is None:
            return None
        if isinstance(decision, DenyDecision):
            raise Denied(decision.reason or "denied by decision", oracle=key, node=node)
        if isinstance(decision, ResultDecision):
            return Substitute(decision.value)
        return True

    async def resolve(
        self, interrupt: Interrupt, key: str, scope: ActionScope
    ) -> Substitute | None:
        """Ask the handler; None means retry the action, a substitute means use its value.

        Raises:
            InterruptRequired: No handler: the interrupt is kept as pending.
            Denied: The handler denied the action, failed, or took too long.
            MutationRefused: The handler's mutation was refused.
        """
        bus = self.book.bus
        if bus.listeners:
            bus.emit(
                InterruptInSignal(
                    **_where(key, scope, self.book.clock.now()), interrupt=interrupt.to_dict()
                )
            )
        handler = self.handler
        if handler is None:
            self.pending[interrupt.id] = interrupt
            raise InterruptRequired(interrupt)
        try:
            decision = await self._ask(handler, interrupt, key, scope)
        except (Exception, ActionTimeout) as exc:
            self._out(interrupt, key, scope, "error", repr(exc))
            raise Denied(f"interrupt handler failed: {exc!r}", oracle=key, node=scope.node) from exc
        if isinstance(decision, MutateDecision):
            try:
                await apply_mutation(self.book, decision, interrupt, scope)
            except MutationRefused as exc:
                self._out(interrupt, key, scope, "deny", exc.reason)
                raise
            self._out(interrupt, key, scope, "mutate", "")
            return None
        reason = decision.reason if isinstance(decision, DenyDecision) else ""
        self._out(interrupt, key, scope, decision.decision, reason)
        if isinstance(decision, RetryDecision):
            return None
        if isinstance(decision, ResultDecision):
            return Substitute(decision.value)
        if bus.listeners:
            bus.emit(DeniedSignal(**_where(key, scope, self.book.clock.now()), reason=reason))
        raise Denied(reason or "denied by interrupt handler", oracle=key, node=scope.node)

    async def _ask(
        self, handler: InterruptHandler, interrupt: Interrupt, key: str, scope: ActionScope
    ) -> InterruptDecision:
        context = InterruptContext(
            governor=self.owner,
            key=key,
            node=scope.node,
            input=scope.input,
            invocation_id=scope.invocation,
            graph_id=scope.graph,
            ancestry=tuple(scope.ancestry),
        )

        async def call() -> Any:
            answer = handler(interrupt, context)
            if inspect.isawaitable(answer):
                return await answer
            return answer

        if self.timeout is None:
            decision = await call()
        else:
            decision = await with_deadline(self.book.clock, self.timeout, call, oracle=key)
        if isinstance(decision, Mapping):
            return decision_from_dict(decision)  # pyright: ignore[reportUnknownArgumentType]
        if not isinstance(decision, RetryDecision | DenyDecision | ResultDecision | MutateDecision):
            raise UserError(f"An interrupt handler returned {decision!r}, not a decision.")
        return decision

    def _out(
        self, interrupt: Interrupt, key: str, scope: ActionScope, decision: str, reason: str
    ) -> None:
        bus = self.book.bus
        if bus.listeners:
            bus.emit(
                InterruptOutSignal(
                    **_where(key, scope, self.book.clock.now()),
                    interrupt_id=interrupt.id,
                    decision=decision,
                    reason=reason,
                )
            )

    def records(self) -> tuple[tuple[Interrupt, ...], tuple[DecidedInterrupt, ...]]:
        """The pending interrupts and the decisions not yet taken, for a snapshot."""
        decided = tuple(
            DecidedInterrupt(action=action, node=node, decision=decision)
            for (action, node), decision in self.decided.items()
        )
        return tuple(self.pending.values()), decided

    def load(self, pending: Iterable[Interrupt], decided: Iterable[DecidedInterrupt]) -> None:
        """Take back the pending interrupts and decisions of a snapshot."""
        for interrupt in pending:
            self.pending[interrupt.id] = interrupt
        for item in decided:
            self.decided[item.action, item.node] = item.decision
