"""Admitting an action on counters shared by processes: one atomic check-and-add per limit.

With a store shared by several processes, ``calls`` (and ``rounds`` when a round begins)
are counted when an action is admitted, bounded by the limit, so processes spending
against one limit together admit exactly its max.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from ._counters import CounterBook
from ._desk import Substitute
from ._plan import BoundLimit, Plan
from ._resolve import exceeded
from ._scope import ActionScope

__all__ = ["reserve"]

Recheck = Callable[[BoundLimit], Awaitable[Substitute | None]]
"""Check one limit again (raising, or interrupting when it is mutable)."""


async def reserve(
    book: CounterBook,
    plan: Plan,
    bounds: tuple[BoundLimit, ...],
    amount: float,
    *,
    scope: ActionScope,
    recheck: Recheck,
) -> Substitute | None:
    """Count an admitted action with one atomic check-and-add per limit in ``bounds``.

    When another process took the last calls since the check, the limit is checked again
    (``recheck``: it raises, or interrupts when mutable) and the count retried; a limit
    still full raises :class:`PolicyExceeded`, and what was reserved on other limits is
    given back. An approved interrupt on a mutable limit counts past it, as in memory.
    """
    graph, invocation = scope.graph, scope.invocation
    now = book.clock.now()
    reserved: list[BoundLimit] = []
    try:
        for bound in bounds:
            added, total, maximum = await book.try_add(bound, amount, now, graph, invocation)
            if not added:
                substitute = await recheck(bound)
                if substitute is not None:
                    await _give_back(book, reserved, amount, now, scope)
                    return substitute
                added, total, maximum = await book.try_add(bound, amount, now, graph, invocation)
                if not added and not bound.limit.mutable:
                    raise exceeded(bound, total, maximum)
                if not added:  # an interrupt on the mutable limit approved the call
                    total = await book.force_add(bound, amount, now, graph, invocation)
            reserved.append(bound)
            if book.bus.routine:
                book.signal_added(
                    bound, amount, total, now, graph, invocation, plan.key, scope.node
                )
    except BaseException:
        await _give_back(book, reserved, amount, now, scope)
        raise
    return None


async def _give_back(
    book: CounterBook, reserved: list[BoundLimit], amount: float, now: float, scope: ActionScope
) -> None:
    for bound in reserved:
        await book.force_add(bound, -amount, now, scope.graph, scope.invocation)
    reserved.clear()
