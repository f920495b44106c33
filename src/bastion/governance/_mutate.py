"""Changing a limit's max at run time: a ``mutate`` decision checked against its rules.

A limit's ``mutable`` rules name who may change its max and up to what. An accepted
mutation lasts one window length in this governor; on a store shared by several processes
an unscoped raise is written beside the counters, so every process sees it.
"""

from __future__ import annotations

from ._counters import CounterBook, Mutation
from ._interrupts import Interrupt, MutateDecision, MutationRefused
from ._plan import BoundLimit
from ._scope import ActionScope
from ._signals import MutationSignal
from ._store import SharedLimitStore

__all__ = ["apply_mutation"]


def _find_limit(
    book: CounterBook, decision: MutateDecision, interrupt: Interrupt | None
) -> BoundLimit:
    window = decision.window
    if (
        window is None
        and interrupt is not None
        and interrupt.oracle == decision.oracle
        and interrupt.limit_type == decision.limit_type
    ):
        window = interrupt.window
    for bound in book.limits.get(decision.oracle, ()):
        if bound.type == decision.limit_type and (window is None or bound.label == window):
            return bound
    raise MutationRefused(
        f"No {decision.limit_type!r} limit (window {window!r}) on {decision.oracle!r}.",
        oracle=decision.oracle,
        limit_type=decision.limit_type,
        requested=decision.max,
    )


def _approve(
    bound: BoundLimit, decision: MutateDecision, current: float, previous: float
) -> tuple[str, bool]:
    """Who approved the new max (``""`` when nobody), and whether it is accepted."""
    rules = dict(bound.limit.mutable or {})
    if decision.approver is not None:
        rule = rules.get(decision.approver)
        if rule is None:
            return "", False
        accepted = rule(decision.max, current, previous) if callable(rule) else rule
        return decision.approver, bool(accepted)
    for name, rule in rules.items():
        if rule(decision.max, current, previous) if callable(rule) else rule:
            return name, True
    return "", False


async def apply_mutation(
    book: CounterBook,
    decision: MutateDecision,
    interrupt: Interrupt | None,
    scope: ActionScope | None = None,
) -> None:
    """Set the limit's new max when its rules accept it.

    Raises:
        MutationRefused: No such limit, or its rules refuse the new max (past a ceiling,
            or an approver who may not change it).
    """
    bound = _find_limit(book, decision, interrupt)
    now = book.clock.now()
    previous = await book.shared_max(bound, now)
    if interrupt is not None and interrupt.current is not None:
        current = interrupt.current
    elif bound.scope is None:
        current = await book.store.get(bound.id, now=now, seconds=bound.seconds)
    else:
        current = 0.0  # scoped counters: only the interrupt knows the current value
    approver, accepted = _approve(bound, decision, current, previous)
    if book.bus.listeners:
        book.bus.emit(
            MutationSignal(
                key=interrupt.action if interrupt is not None else bound.oracle,
                node=interrupt.node if interrupt is not None else "",
                graph_id=scope.graph if scope is not None else "",
                invocation_id=scope.invocation if scope is not None else "",
                timestamp=now,
                oracle=bound.oracle,
                limit_type=bound.type,
                window=bound.label,
                previous_max=previous,
                new_max=decision.max if accepted else previous,
                approved_by=approver or (decision.approver or ""),
                accepted=accepted,
            )
        )
    if not accepted:
        who = repr(decision.approver) if decision.approver else "any approver"
        names = ", ".join(repr(n) for n in bound.limit.mutable or {}) or "nobody"
        raise MutationRefused(
            f"Raising {bound.type} on {bound.oracle!r} to {decision.max:g} was refused "
            f"({who}; allowed approvers: {names}; current max {previous:g}).",
            oracle=bound.oracle,
            limit_type=bound.type,
            requested=decision.max,
            node=interrupt.node if interrupt is not None else "",
        )
    book.mutations[bound.id] = Mutation(max=decision.max, at=now, by=approver)
    store = book.store
    if bound.scope is None and isinstance(store, SharedLimitStore):
        # Every process sharing the counters sees the raise, not only this one.
        await store.raise_max(bound.id, decision.max, now=now, seconds=bound.seconds)
