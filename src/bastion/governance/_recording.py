"""Counting what a finished action consumed: calls, cost, tokens and custom counters.

Amounts come from a limit's ``extract(result)`` when it has one, else from the usage the
action reported. In-memory counters far from anything unusual are added inline, without a
coroutine per counter.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bastion.core import Usage

from ._accumulate import amount_for, find_usage
from ._counters import CounterBook
from ._interrupts import BudgetUnpriced
from ._plan import BoundLimit, Plan

__all__ = ["Pending", "count_usage"]


Pending = list[tuple[BoundLimit, float, "Mapping[str, float] | None"]]
"""Amounts still to add to a store that needs awaiting: the limit, amount and breakdown."""


def count_usage(  # noqa: PLR0917 - hot path: positional arguments parse fastest
    book: CounterBook,
    plan: Plan,
    result: object,
    usage: Usage | None,
    cost: float | None,
    tokens: float | None,
    counters: Mapping[str, float] | None,
    calls: int,
    node: str,
    graph: str,
    invocation: str,
) -> Pending | None:
    """Add an action's amounts to every counted limit of its plan (see ``Governor.record``).

    In-memory counters are added at once; for other stores the amounts are returned, for
    the caller to add with ``CounterBook.add``.
    """
    pending: Pending | None = None
    bounds = plan.counted
    key = plan.key
    if usage is None:
        usage = find_usage(result)
        if usage is None and calls == 0 and cost is None and tokens is None and counters is None:
            bounds = plan.extracting  # only a limit's extract can count anything
            if not bounds:
                return None
    if usage is not None and cost is None and usage.cost_usd is None:
        _check_priced(bounds, key, usage)
    now = book.clock.now()
    memory = book.memory
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
            if book.bus.routine:
                book.signal_added(
                    bound, amount, total, now, graph, invocation, key, node, breakdown
                )
        elif memory is not None:
            book.add_now(bound, amount, now, graph, invocation, key, node, breakdown)
        elif pending is None:
            pending = [(bound, amount, breakdown)]
        else:
            pending.append((bound, amount, breakdown))
    return pending


def _check_priced(bounds: Sequence[BoundLimit], key: str, usage: Usage) -> None:
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
