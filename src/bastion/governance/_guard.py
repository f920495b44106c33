"""The guard of a governor: judging an action until it passes, and admitting it on shared counters.

:meth:`Guard.judge` asks the policies and checks the limits; an interrupt goes to the
interrupt desk, and the action is judged again once a decision lets it retry.
:meth:`Guard.reserve` counts an admitted action on a store shared by several processes with
one atomic check-and-add per limit, so processes spending against one limit together admit
exactly its max.
"""

from __future__ import annotations

from collections.abc import Iterator

from ._counters import CounterBook
from ._desk import InterruptDesk, Substitute
from ._interrupts import Denied
from ._plan import BoundLimit, Plan
from ._resolve import (
    Interrupted,
    Verdict,
    check_limits,
    exceeded,
    judge,
    resolve_async,
    resolve_sync,
)
from ._scope import ActionScope

__all__ = ["Guard"]


class Guard:
    """Policies, limits and interrupts for one action at a time."""

    __slots__ = ("_ids", "book", "desk")

    def __init__(self, book: CounterBook, desk: InterruptDesk, ids: Iterator[int]) -> None:
        self.book = book
        self.desk = desk
        self._ids = ids  # action ids, shared with the governor's signals

    async def judge(
        self,
        plan: Plan,
        limits: tuple[BoundLimit, ...],
        scope: ActionScope,
        *,
        approved: bool,
        tokens: float,
        policies: bool = True,
        asked: tuple[Verdict | None] | None = None,
    ) -> Substitute | None:
        """Judge the action until it passes, or a decision substitutes or refuses it.

        ``asked`` holds the policies' verdict when the caller already asked them for this
        round (each policy is asked once per round).
        """
        book = self.book
        clock = book.clock
        for _ in range(self.desk.max_rounds):
            now = clock.now()
            try:
                if policies and plan.policies:
                    if asked is not None:
                        verdict, asked = asked[0], None
                    elif plan.all_sync:
                        verdict = resolve_sync(
                            plan, scope.policy_action(plan.key, now, self.new_action_id())
                        )
                    else:
                        action = scope.policy_action(plan.key, now, self.new_action_id())
                        verdict = await resolve_async(plan, action)
                    if verdict is not None:
                        judge(book, plan, verdict, scope, approved=approved, now=now)
                if limits:
                    await check_limits(book, plan, limits, scope, now=now, tokens=tokens)
                return None
            except Interrupted as exc:
                outcome = await self.desk.resolve(exc.interrupt, plan.key, scope)
                if outcome is not None:
                    return outcome
                approved = True
        raise Denied(
            f"Still interrupted after {self.desk.max_rounds} decisions; giving up.",
            oracle=plan.key,
            node=scope.node,
        )

    def new_action_id(self) -> str:
        """A fresh id for an action (``PolicyAction.oracle_id``)."""
        return f"act_{next(self._ids)}"

    async def reserve(
        self, plan: Plan, bounds: tuple[BoundLimit, ...], amount: float, scope: ActionScope
    ) -> Substitute | None:
        """Count an admitted action with one atomic check-and-add per limit in ``bounds``.

        ``bounds`` are its ``calls`` limits, or its ``rounds`` limits when a round begins.
        When another process took the last calls since the check, the limit is judged
        again (it raises, or interrupts when mutable) and the count retried; a limit still
        full raises :class:`PolicyExceeded`, and what was reserved on other limits is given
        back. An approved interrupt on a mutable limit counts past it, as in memory.
        """
        book = self.book
        graph, invocation = scope.graph, scope.invocation
        now = book.clock.now()
        reserved: list[BoundLimit] = []
        try:
            for bound in bounds:
                added, total, maximum = await book.try_add(bound, amount, now, graph, invocation)
                if not added:
                    substitute = await self.judge(
                        plan, (bound,), scope, approved=False, tokens=0.0, policies=False
                    )
                    if substitute is not None:
                        await self._give_back(reserved, amount, now, scope)
                        return substitute
                    added, total, maximum = await book.try_add(
                        bound, amount, now, graph, invocation
                    )
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
            await self._give_back(reserved, amount, now, scope)
            raise
        return None

    async def _give_back(
        self, reserved: list[BoundLimit], amount: float, now: float, scope: ActionScope
    ) -> None:
        for bound in reserved:
            await self.book.force_add(bound, -amount, now, scope.graph, scope.invocation)
        reserved.clear()
