"""Judging one action: policy resolution and limit checks, each ending in a verdict.

Policies resolve in two phases over the plan's levels (capture top-down: the first
``force`` is final; bubble bottom-up: the lowest deny, interrupt or stop wins). A deny or a
used-up limit raises; an interrupt (a policy's, or a mutable limit's) raises
:class:`Interrupted` for the governor to take to its interrupt desk.
"""

from __future__ import annotations

from typing import Any

from bastion.core import UserError

from ._counters import CounterBook
from ._desk import new_interrupt_id
from ._interrupts import Denied, Interrupt, PolicyExceeded
from ._plan import BoundLimit, Plan
from ._policy import ALLOW, PolicyAction, PolicyResult
from ._scope import ActionScope
from ._signals import DeniedSignal, ExceededSignal

__all__ = ["Interrupted", "Verdict", "check_limits", "judge", "resolve_async", "resolve_sync"]

Verdict = tuple[PolicyResult, int, bool]
"""The decisive result, the index of its policy in the plan, and whether it was forced."""


class Interrupted(Exception):
    """An action needs a decision before it may go on."""

    def __init__(self, interrupt: Interrupt) -> None:
        super().__init__(interrupt.reason)
        self.interrupt = interrupt


def resolve_sync(plan: Plan, action: PolicyAction) -> Verdict | None:
    """Ask every (sync) policy once; return the verdict, or None when all allow."""
    # Bubbling picks the lowest decisive result, i.e. the last one seen top-down, so one
    # pass does both phases and nothing is stored.
    decisive: Verdict | None = None
    index = -1
    for policy in plan.policies:
        index += 1
        action.policy_id = policy.id
        result = policy.fn(action)
        if result is None or result is ALLOW:
            continue
        if not isinstance(result, PolicyResult):
            raise UserError(
                f"Policy {policy.id!r} returned {result!r}; declare it `async def` if it "
                "awaits, and return allow(), deny(reason) or interrupt(payload)."
            )
        if result.force:
            return result, index, True
        if result.stop or result.approval != "allow":
            decisive = (result, index, False)
    return decisive


async def resolve_async(plan: Plan, action: PolicyAction) -> Verdict | None:
    """:func:`resolve_sync` for plans with ``async def`` policies."""
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


def judge(
    book: CounterBook,
    plan: Plan,
    verdict: Verdict,
    scope: ActionScope,
    *,
    approved: bool,
    now: float,
) -> None:
    """Act on a verdict: allow, raise :class:`Denied`, or raise :class:`Interrupted`."""
    result, index, forced = verdict
    if result.approval == "allow":
        return
    policy = plan.policies[index]
    if result.approval == "deny":
        if book.bus.listeners:
            book.bus.emit(
                DeniedSignal(
                    **scope.signal_fields(plan.key, now),
                    reason=result.reason,
                    policy_id=policy.id,
                    forced=forced,
                )
            )
        raise Denied(result.reason or f"denied by {policy.id}", oracle=plan.key, node=scope.node)
    if approved:  # a decision already answered this policy's interrupt
        return
    raise Interrupted(
        Interrupt(
            id=new_interrupt_id(),
            kind="policy",
            action=plan.key,
            oracle=plan.levels[index],
            node=scope.node,
            reason=result.reason or f"policy {policy.id} asks for a decision",
            payload=result.payload,
        )
    )


async def check_limits(
    book: CounterBook,
    plan: Plan,
    limits: tuple[BoundLimit, ...],
    scope: ActionScope,
    *,
    now: float,
    tokens: float,
) -> None:
    """Raise when the action would pass one of ``limits``.

    :class:`PolicyExceeded` for a limit that cannot change, :class:`Interrupted` for a
    mutable one.
    """
    breach = await book.breach(limits, now, scope.graph, scope.invocation, tokens)
    if breach is None:
        return
    bound, current, maximum, step = breach
    mutable = bool(bound.limit.mutable)
    if book.bus.listeners:
        book.bus.emit(
            ExceededSignal(
                **scope.signal_fields(plan.key, now),
                oracle=bound.oracle,
                limit_type=bound.type,
                window=bound.label,
                current=current,
                max=maximum,
                mutable=mutable,
            )
        )
    if not mutable:
        raise exceeded(bound, current, maximum)
    raise Interrupted(
        Interrupt(
            id=new_interrupt_id(),
            kind="limit",
            action=plan.key,
            oracle=bound.oracle,
            node=scope.node,
            limit_type=bound.type,
            window=bound.label,
            current=current,
            max=maximum,
            proposed=current + step,
            approvers=tuple(bound.limit.mutable or ()),
            reason=(
                f"{bound.type} limit on {bound.oracle!r} reached: {current:g} of "
                f"{maximum:g} ({bound.label})"
            ),
        )
    )


def exceeded(bound: BoundLimit, current: float, maximum: float) -> PolicyExceeded:
    """The error of a used-up limit."""
    return PolicyExceeded(
        oracle=bound.oracle, limit_type=bound.type, window=bound.label, current=current, max=maximum
    )
