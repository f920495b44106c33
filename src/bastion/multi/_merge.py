"""Merge strategies of a fan-out: :class:`Concat`, :class:`FirstSuccess`, :class:`Judge`, custom.

``merge=`` takes a strategy object, one of the names ``"concat"`` / ``"first_success"``, or
a function of the children's outcomes (sync or async) returning the merged output.
:func:`merge_outcomes` applies one; ``_fanout`` calls it once every child has ended (for
``first_success``, once the winner is known and its siblings are cancelled).

A :class:`Judge` is an agent (or a function) that picks one output or writes a synthesis
from them, behind the :class:`~bastion.agent.MergeGuard` (``_merge_guard``).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from bastion.core import RunErrorInfo, UserError
from bastion.tools import render_output

from ._judge import Judge, Merged, judged, nothing_merged

if TYPE_CHECKING:
    from bastion.agent._config import RunConfig
    from bastion.core import Clock

    from ._fanout_types import ChildResult

__all__ = [
    "Concat",
    "FirstSuccess",
    "Merge",
    "MergeFunction",
    "check_merge",
    "merge_outcomes",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class Concat:
    """Join the outputs of the children that completed, in registration order."""

    separator: str = "\n\n"


@dataclass(frozen=True, kw_only=True, slots=True)
class FirstSuccess:
    """The output of the first child, in registration order, that completed.

    Once it is known (it completed and every child before it failed), the siblings still
    running are cancelled (they end ``aborted``) and those not started never start.
    """


MergeFunction: TypeAlias = Callable[[Sequence["ChildResult"]], object]
Merge: TypeAlias = (
    "Literal['concat', 'first_success'] | Concat | FirstSuccess | Judge | MergeFunction"
)


def check_merge(merge: object) -> Concat | FirstSuccess | Judge | MergeFunction:
    """The strategy ``merge`` names.

    Raises:
        UserError: Not a strategy.
    """
    if merge == "concat":
        return Concat()
    if merge == "first_success":
        return FirstSuccess()
    if merge == "judge":
        raise UserError("merge='judge' needs a judge: pass merge=Judge(judge=<agent or function>).")
    if isinstance(merge, Concat | FirstSuccess | Judge):
        return merge
    if callable(merge) and not isinstance(merge, str):
        return merge  # pyright: ignore[reportUnknownVariableType]
    raise UserError(
        f"Unknown merge strategy {merge!r}. Use 'concat', 'first_success', Concat(separator=...), "
        "FirstSuccess(), Judge(judge=...), or a function of the children's results."
    )


async def merge_outcomes(
    strategy: Concat | FirstSuccess | Judge | MergeFunction,
    children: tuple[ChildResult, ...],
    *,
    host: RunConfig | None,
    clock: Clock,
    durable_id: str | None = None,
) -> Merged:
    """Merge the children's outcomes with ``strategy``.

    ``durable_id``: the fan-out id a judge agent's runs derive their ids from (with a
    store, a re-run takes the judge's journaled answer); ``None``: the judge runs afresh.
    """
    done = [c for c in children if c.ok]
    if isinstance(strategy, Concat):
        if not done:
            return Merged(error=nothing_merged(children))
        return Merged(output=strategy.separator.join(render_output(c.output) for c in done))
    if isinstance(strategy, FirstSuccess):
        if not done:
            return Merged(error=nothing_merged(children))
        return Merged(output=done[0].output, chosen=done[0].name)
    if isinstance(strategy, Judge):
        return await judged(strategy, children, host, clock, durable_id)
    try:
        value = strategy(children)
        if inspect.isawaitable(value):
            value = await value
    except Exception as exc:
        return Merged(
            error=RunErrorInfo(code="merge_failed", message=f"{type(exc).__name__}: {exc}")
        )
    return Merged(output=value)
