"""Running an admitted action: retries and timeout, counting, and the routine signals.

``Governor.exec`` checks the action first; this runs it (``fn()``, awaited when it returns
an awaitable), counts what it consumed (a failed action counts too), then re-raises its
failure. ``oracle.exec.in`` / ``oracle.exec.out`` go out only when a routine listener wants
them (``scope`` is given then).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ._counters import CounterBook
from ._plan import Plan
from ._recording import count_usage
from ._run import run_action
from ._scope import ActionScope
from ._signals import ExecInSignal, ExecOutSignal

__all__ = ["run_counted"]


async def run_counted(  # noqa: PLR0917 - hot path: positional arguments parse fastest
    book: CounterBook,
    plan: Plan,
    fn: Callable[[], Any],
    calls: int,
    scope: ActionScope | None,
    action_id: str,
    where: tuple[str, str, str],
) -> Any:
    """Run ``fn``, count it on ``plan``'s limits, and return its result (or raise).

    ``where`` is the (node, graph, invocation) the action counts in; ``calls`` what it
    adds to ``calls`` limits (0 when they were counted as it was admitted).
    """
    clock, bus, key = book.clock, book.bus, plan.key
    if scope is not None:
        fields = scope.signal_fields(key, clock.now())
        bus.emit(ExecInSignal(**fields, action_id=action_id), routine=True)
    started = clock.monotonic()
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
                fn, clock=clock, oracle=key, retries=plan.retries, timeout=plan.timeout
            )
    except Exception as exc:
        failure = exc
    if plan.counted:
        node, graph, invocation = where
        pending = count_usage(
            book, plan, result, None, None, None, None, calls, node, graph, invocation
        )
        for bound, amount, breakdown in pending or ():  # a store that needs awaiting
            await book.add(bound, amount, clock.now(), graph, invocation, key, node, breakdown)
    if scope is not None:
        bus.emit(
            ExecOutSignal(
                **scope.signal_fields(key, clock.now()),
                action_id=action_id,
                duration=clock.monotonic() - started,
                attempts=attempts,
                error=None if failure is None else type(failure).__name__,
            ),
            routine=True,
        )
    if failure is not None:
        raise failure
    return result
