"""How much an action consumed, per limit type: the "extract" step.

Called by ``Governor.record`` after an action. ``cost`` and ``context`` read a
:class:`bastion.core.Usage` (``cost_usd``, ``total_tokens``) unless the limit has its own
``extract``; ``calls`` counts one per action; ``x:*`` counters take what the caller reports.
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from bastion.core import Usage, UserError

from ._policy import Limit

__all__ = ["amount_for", "find_usage"]


def find_usage(result: object) -> Usage | None:
    """Return the :class:`Usage` of a result: the result itself or its ``usage`` attribute."""
    if isinstance(result, Usage):
        return result
    usage = getattr(result, "usage", None)
    return usage if isinstance(usage, Usage) else None


def _extracted(limit: Limit, result: object) -> tuple[float, Mapping[str, float] | None]:
    assert limit.extract is not None
    value = limit.extract(result)
    if value is None:
        return 0.0, None
    if isinstance(value, Mapping):
        breakdown = {str(k): float(v) for k, v in value.items()}
        return math.fsum(breakdown.values()), breakdown
    return float(value), None


def amount_for(
    limit: Limit,
    result: object,
    *,
    usage: Usage | None,
    cost: float | None,
    tokens: float | None,
    counters: Mapping[str, float] | None,
    calls: int,
) -> tuple[float, Mapping[str, float] | None]:
    """Return ``(amount, breakdown)`` to add to ``limit``'s counter for one action.

    Raises:
        UserError: For a negative or non-finite amount (counters only grow).
    """
    kind = limit.type
    breakdown: Mapping[str, float] | None = None
    if kind == "calls":
        amount = float(calls)
    elif kind.startswith("x:") and counters is not None and kind in counters:
        amount = float(counters[kind])
    elif limit.extract is not None:
        amount, breakdown = _extracted(limit, result)
    elif kind == "cost":
        if cost is not None:
            amount = float(cost)
        elif usage is not None:
            amount = usage.cost_usd or 0.0
            breakdown = {
                "cost_usd": amount,
                "prompt_tokens": float(usage.prompt_tokens),
                "completion_tokens": float(usage.completion_tokens),
            }
        else:
            amount = 0.0
    elif kind == "context":
        if tokens is not None:
            amount = float(tokens)
        elif usage is not None:
            amount = float(usage.total_tokens)
            breakdown = {
                "prompt_tokens": float(usage.prompt_tokens),
                "completion_tokens": float(usage.completion_tokens),
            }
        else:
            amount = 0.0
    else:
        amount = 0.0
    if amount < 0 or not math.isfinite(amount):
        raise UserError(f"A {kind!r} amount must be finite and >= 0; got {amount!r}.")
    return amount, breakdown
