"""Fan-out: run several children concurrently, then merge their outputs (``Agent.fan_out``).

:func:`execute` runs one fan-out: ``max_concurrent_children`` workers take the children in
registration order, each child runs through :func:`~bastion.multi._multi_child.run_child` (its
budget enforced there), a child that fails is isolated (its outcome says why), and once all
have ended (or, for ``first_success``, once the winner is known and its siblings are
cancelled) the merge strategy (``_merge``) makes the output.

Governance: under an agent with a governor each child is an action on ``agent:<child>``,
checked before it starts (a refused child fails with ``policy_denied``) and charged with
its usage when it ends; an ``Agent`` child's own model and tool calls go through the same
governor as node ``<child>``.

Durability: with a store, the fan-out is journaled as a composite run (``_composite``)
under ``fan_out_id``; each child's outcome is journaled when it ends, before its
``agent.fanout.child.end`` event, and running the fan-out again with the same id takes the
journaled outcomes instead of running those children again. Each child's own run has an id
derived from the fan-out id, its index and its name (``_fanout_relay``), so the
run of a child that was in flight is found again and continued from its own journal.

Events go to the caller of :meth:`FanOutStream` and to the agent's ``event_bus``; the
children's events, each wrapped in a ``SubagentEvent``, go to the caller of the stream only.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from functools import partial
from typing import TYPE_CHECKING

from bastion.core import RunErrorInfo, Usage
from bastion.governance import GovernanceError

from ._composite import CompositeLog
from ._fanout_records import from_record, jsonable, to_part
from ._fanout_relay import ChildRelay, fan_out_child_run_id
from ._fanout_types import (
    ChildResult,
    FanOutChildEndEvent,
    FanOutMergedEvent,
    FanOutResult,
    FanOutSpawnedEvent,
)
from ._judge import Judge
from ._merge import FirstSuccess, merge_outcomes
from ._multi_child import ChildHandle, run_child

if TYPE_CHECKING:
    from bastion.stores import Stores

    from ._fanout_plan import FanOutPlan
    from ._fanout_types import FanOutChild, FanOutEvent


__all__ = ["FAN_OUT_CHILD", "FAN_OUT_ID", "execute"]

FAN_OUT_ID = "bastion.fan_out_id"
FAN_OUT_CHILD = "bastion.fan_out_child"
_PARENT_AGENT = "bastion.parent_agent"
_GOVERNANCE_CODES = {"Denied": "policy_denied", "PolicyExceeded": "budget_exceeded"}


async def execute(plan: FanOutPlan, emit: Callable[[FanOutEvent], None] | None) -> FanOutResult:
    """Run the fan-out ``plan``; ``emit`` receives its events as they happen.

    The children's events (as ``SubagentEvent``) go to ``emit`` only, not to the bus.
    """
    forward = emit
    bus = plan.bus
    if bus is not None:
        inner = emit

        def emit_both(event: FanOutEvent) -> None:
            bus.emit(event.type, event)
            if inner is not None:
                inner(event)

        emit = emit_both
    log = await _open_log(plan)
    run = _FanOut(plan, log, emit, forward)
    return await run.run()


async def _open_log(plan: FanOutPlan) -> CompositeLog | None:
    if plan.stores is None:
        return None
    stores: Stores = await plan.stores()
    return await CompositeLog.open(
        stores,
        plan.id,
        name=f"{plan.host.name}.fan_out",
        kind="fan_out",
        metadata={_PARENT_AGENT: plan.host.name, "children": [c.label for c in plan.children]},
    )


class _FanOut:
    """One running fan-out: its workers, the children's handles and outcomes."""

    def __init__(
        self,
        plan: FanOutPlan,
        log: CompositeLog | None,
        emit: Callable[[FanOutEvent], None] | None,
        forward: Callable[[FanOutEvent], None] | None,
    ) -> None:
        self.plan = plan
        self.log = log
        self.emit = emit
        self.forward = forward  # the stream's caller: also gets the children's events
        self.outcomes: list[ChildResult | None] = [None] * len(plan.children)
        self.handles: dict[int, ChildHandle] = {}
        self.next = 0
        self.settled = False  # first_success: the winner is known, start nothing more
        self.first = isinstance(plan.strategy, FirstSuccess)

    async def run(self) -> FanOutResult:
        plan = self.plan
        self._restore()
        self._check_winner()
        if not self.settled:
            workers = min(plan.max_concurrent, len(plan.children))
            async with asyncio.TaskGroup() as group:
                for _ in range(workers):
                    group.create_task(self._work())
        children = tuple(
            o if o is not None else _not_started(c, i)
            for i, (c, o) in enumerate(zip(plan.children, self.outcomes, strict=True))
        )
        # A judge's answer is journaled in its own run (with a store), unless a child's run
        # was busy elsewhere: a later re-run then merges other outcomes, and asks again.
        busy = any(c.error is not None and c.error.code == "run_busy" for c in children)
        merged = await merge_outcomes(
            plan.strategy,
            children,
            host=plan.host,
            clock=plan.clock,
            durable_id=None if busy or self.log is None else plan.id,
        )
        usage = Usage()
        for child in children:
            usage += child.usage
        if merged.usage is not None:
            usage += merged.usage
        result = FanOutResult(
            fan_out_id=plan.id,
            output=merged.output,
            children=children,
            strategy=_strategy_name(plan.strategy),
            usage=usage,
            chosen=merged.chosen,
            error=merged.error,
            guard=merged.guard,
        )
        if self.log is not None:
            status = "completed" if result.ok else "failed"
            await self.log.finish(status, jsonable(result.output), usage)
        self._emit(
            FanOutMergedEvent(
                fan_out_id=plan.id,
                strategy=result.strategy,
                succeeded=tuple(c.name for c in children if c.ok),
                failed=tuple(c.name for c in children if not c.ok),
                chosen=result.chosen,
                error=result.error,
            )
        )
        return result

    def _emit(self, event: FanOutEvent) -> None:
        if self.emit is not None:
            self.emit(event)

    def _spawned(self, index: int, name: str, run_id: str) -> None:
        """Called by ``run_child`` once the child's run exists: the ``spawned`` event."""
        self._emit(
            FanOutSpawnedEvent(fan_out_id=self.plan.id, child=name, index=index, run_id=run_id)
        )

    def _restore(self) -> None:
        """Take the outcomes an earlier attempt journaled."""
        log = self.log
        if log is None or not log.done:
            return
        for index, child in enumerate(self.plan.children):
            part = log.done.get(child.label)
            if part is None:
                continue
            outcome = from_record(child, index, part)
            self.outcomes[index] = outcome
            self._emit(
                FanOutChildEndEvent(
                    fan_out_id=self.plan.id,
                    child=outcome.name,
                    index=index,
                    status=outcome.status,
                    error=outcome.error,
                    restored=True,
                )
            )

    async def _work(self) -> None:
        children = self.plan.children
        while not self.settled:
            index = self.next
            while index < len(children) and self.outcomes[index] is not None:
                index += 1  # restored from the journal
            if index >= len(children):
                return
            self.next = index + 1
            await self._one(index, children[index])

    async def _one(self, index: int, child: FanOutChild) -> None:
        plan = self.plan
        handle = self.handles[index] = ChildHandle()
        outcome = await self._admit(index, child)
        if outcome is None:
            metadata = {
                _PARENT_AGENT: plan.host.name,
                FAN_OUT_ID: plan.id,
                FAN_OUT_CHILD: child.label,
            }
            started = partial(self._spawned, index, child.label)
            run_id = fan_out_child_run_id(plan.id, index, child.label)
            relay = None if self.forward is None else ChildRelay(self.forward, plan, child, run_id)
            outcome = await run_child(
                child,
                index,
                handle,
                plan.budget,
                plan.host,
                plan.clock,
                metadata,
                started,
                run_id=run_id,
                on_event=relay,
            )
            await self._charge(child.label, outcome)
        del self.handles[index]
        busy = outcome.error is not None and outcome.error.code == "run_busy"
        if self.log is not None and not handle.cancelled and not busy:
            # A child whose run is live elsewhere is not journaled: a later re-run continues it.
            await self.log.record(to_part(outcome))
        self.outcomes[index] = outcome
        self._emit(
            FanOutChildEndEvent(
                fan_out_id=plan.id,
                child=outcome.name,
                index=index,
                status=outcome.status,
                error=outcome.error,
            )
        )
        self._check_winner()

    def _check_winner(self) -> None:
        """``first_success``: once the first completed child (in order) is known, stop the rest."""
        if not self.first or self.settled:
            return
        for outcome in self.outcomes:
            if outcome is None:
                return  # an earlier child may still win
            if outcome.ok:
                break
        else:
            return
        self.settled = True
        for handle in self.handles.values():
            handle.cancel()

    async def _admit(self, index: int, child: FanOutChild) -> ChildResult | None:
        """The governor's verdict on starting ``child``: ``None`` to go, else its outcome."""
        governance = self.plan.host.governance
        if governance is None:
            return None

        try:
            substitute = await governance.governor.check(
                f"agent:{child.label}",
                input={"input": child.input},
                node=governance.node,
                invocation=self.plan.id,
                target=child.label,
                calls=1,
            )
        except GovernanceError as exc:
            code = _GOVERNANCE_CODES.get(type(exc).__name__, "governance_error")
            error = RunErrorInfo(code=code, message=str(exc))
            return ChildResult(name=child.label, index=index, status="failed", error=error)
        if substitute is not None:
            return ChildResult(
                name=child.label, index=index, status="completed", output=substitute.value
            )
        return None

    async def _charge(self, name: str, outcome: ChildResult) -> None:
        governance = self.plan.host.governance
        if governance is not None and outcome.usage.requests:
            await governance.governor.record(
                f"agent:{name}",
                usage=outcome.usage,
                calls=0,
                node=governance.node,
                invocation=self.plan.id,
            )


def _not_started(child: FanOutChild, index: int) -> ChildResult:
    error = RunErrorInfo(code="cancelled", message=f"Child {child.label!r} was not started.")
    return ChildResult(name=child.label, index=index, status="aborted", error=error)


def _strategy_name(strategy: object) -> str:
    if isinstance(strategy, FirstSuccess):
        return "first_success"
    if isinstance(strategy, Judge):
        return "judge"
    if callable(strategy):
        return "custom"
    return "concat"
