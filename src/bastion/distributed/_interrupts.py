"""Governance interrupts of an agent workflow: parked like approvals, decided by an update.

A run that reaches a mutable limit (a budget with ``mutable_by``) or a policy asking for a
decision parks: the ``status`` query lists the interrupt (:class:`WorkflowInterrupt`), the
``resolve`` update decides it (raise the limit, deny, retry, or give a result), and the run
goes on once everything it waits for is decided. :class:`GovernedWorkflow` is the workflow's
side, :class:`InterruptClient` the client's (``TemporalAgent.raise_budget``).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import fields
from functools import cache
from typing import TYPE_CHECKING

from pydantic import TypeAdapter
from temporalio import workflow
from temporalio.exceptions import ApplicationError
from typing_extensions import TypedDict

from bastion.core import UserError
from bastion.governance import decision_from_dict
from bastion.tools import ApprovalDecision, InterruptResolution

from ._below import route
from ._shared import check_decisions, decision_update
from ._views import WorkflowInterrupt, decisions_adapter, interrupt_view

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Sequence

    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import RunResult
    from bastion.governance import InterruptDecision
    from bastion.tools import ApprovalRequest

    from ._views import WorkflowStatus

__all__ = [
    "DecidingWorkflow",
    "GovernedWorkflow",
    "InterruptClient",
    "raise_resolution",
    "resolutions_adapter",
    "send_resolutions",
]


class WireResolution(TypedDict, total=False):
    """One decision the ``resolve`` update carries, as JSON."""

    interrupt_id: str
    decision: dict[str, object] | None
    """A decision's fields (``{"decision": "mutate", "max": 20, ...}``)."""


@cache
def resolutions_adapter() -> TypeAdapter[list[WireResolution]]:
    """The adapter of what the ``resolve`` update carries: ``interrupt_id`` and ``decision``."""
    return TypeAdapter(list[WireResolution])


class GovernedWorkflow:
    """The interrupts a parked agent workflow waits on, and the update that decides them."""

    def __init__(self) -> None:
        self._interrupts: dict[str, WorkflowInterrupt] = {}
        self._resolved: dict[str, InterruptResolution] = {}

    def park_interrupts(self, result: RunResult[object]) -> set[str]:
        """Hold the run's interrupts; the ids of the tool calls they hold."""
        state = result.state
        items = [] if state is None else state.interrupts
        self._interrupts = {item.id: interrupt_view(item) for item in items}
        self._resolved = {}
        return {call for item in items for call in item.tool_call_ids}

    def interrupt_views(self) -> list[WorkflowInterrupt]:
        """The interrupts the run waits on."""
        return list(self._interrupts.values())

    def interrupts_decided(self) -> bool:
        """Whether every interrupt the run waits on is decided."""
        return len(self._resolved) == len(self._interrupts)

    def undecided_interrupts(self) -> list[str]:
        """The ids of the interrupts the run waits on that nobody decided yet."""
        return [i for i in self._interrupts if i not in self._resolved]

    def deny_the_rest(
        self,
        pending: Mapping[str, ApprovalRequest],
        decided: dict[str, ApprovalDecision],
        reason: str,
    ) -> None:
        """Deny, with ``reason``, every pending call and interrupt not decided yet.

        The run stops waiting without a person: it was cancelled, or a steering message
        came. The calls' denials go into ``decided``.
        """
        for call in pending:
            if call not in decided:
                decided[call] = ApprovalDecision(tool_call_id=call, granted=False, reason=reason)
        for interrupt in self.undecided_interrupts():
            denial = {"decision": "deny", "reason": reason}
            self._resolved[interrupt] = InterruptResolution(interrupt_id=interrupt, decision=denial)

    def take_resolutions(self) -> list[InterruptResolution]:
        """The decisions, for the directive that resumes the run (and forget them)."""
        resolutions = list(self._resolved.values())
        self._interrupts, self._resolved = {}, {}
        return resolutions

    @workflow.update
    async def resolve(self, resolutions: str) -> list[str]:
        """Decide pending interrupts; returns the interrupt ids still waiting."""
        for resolution in self._checked(resolutions):
            self._resolved[resolution.interrupt_id] = resolution
        return self.undecided_interrupts()

    @resolve.validator
    def check_resolutions(self, resolutions: str) -> None:
        """Refuse decisions on interrupts not waiting, decided already, or malformed."""
        self._checked(resolutions)

    def _checked(self, resolutions: str) -> list[InterruptResolution]:
        try:
            given = resolutions_adapter().validate_json(resolutions)
        except ValueError as error:
            raise ApplicationError(f"Malformed interrupt decisions: {error}") from None
        return [self._resolution(item) for item in given]

    def _resolution(self, item: WireResolution) -> InterruptResolution:
        interrupt_id = item.get("interrupt_id", "")
        interrupt = self._interrupts.get(interrupt_id)
        if interrupt is None:
            waiting = ", ".join(self._interrupts) or "none"
            raise ApplicationError(
                f"No interrupt {interrupt_id!r} is waiting for a decision (waiting: {waiting})."
            )
        if interrupt_id in self._resolved:
            raise ApplicationError(f"Interrupt {interrupt_id!r} is already decided.")
        decision = dict(item.get("decision") or {})
        if decision.get("decision") == "mutate":
            _check_raise(interrupt, decision)
            decision.setdefault("oracle", interrupt.oracle)
            decision.setdefault("limit_type", interrupt.limit_type)
            if decision.get("window") is None:
                decision["window"] = interrupt.window
        try:
            decision_from_dict(decision)
        except (UserError, KeyError, TypeError, ValueError) as error:
            raise ApplicationError(f"Malformed decision on {interrupt_id!r}: {error}") from None
        return InterruptResolution(interrupt_id=interrupt_id, decision=decision)


class DecidingWorkflow(GovernedWorkflow):
    """A parked run's decisions: on its calls (the ``decide`` update) and on its interrupts.

    A subclass sets ``_pending`` (the calls waiting) and ``_decided`` when the run parks.
    """

    _pending: dict[str, ApprovalRequest]
    _decided: dict[str, ApprovalDecision]

    def _all_decided(self) -> bool:
        """Whether every call and every interrupt the run waits on is decided."""
        return len(self._decided) == len(self._pending) and self.interrupts_decided()

    @workflow.update
    async def decide(self, decisions: str) -> list[str]:
        """Record decisions on pending calls; returns the ids still waiting."""
        for decision in decisions_adapter().validate_json(decisions):
            self._decided[decision.tool_call_id] = decision
        return [i for i in self._pending if i not in self._decided]

    @decide.validator
    def check(self, decisions: str) -> None:
        """Refuse decisions on calls that are not waiting, or are decided already."""
        check_decisions(decisions, self._pending, self._decided)


def _check_raise(interrupt: WorkflowInterrupt, decision: Mapping[str, object]) -> None:
    """Refuse a raise of what is no limit, to no number, or by someone who may not."""
    if interrupt.kind != "limit":
        raise ApplicationError(
            f"Interrupt {interrupt.id!r} is a policy's, not a limit's: nothing to raise."
        )
    maximum = decision.get("max")
    if isinstance(maximum, bool) or not isinstance(maximum, int | float) or not maximum >= 0:
        raise ApplicationError(f"A raise needs a max >= 0, got {maximum!r}.")
    if interrupt.max is not None and maximum <= interrupt.max:
        raise ApplicationError(
            f"Raising {interrupt.limit_type} on {interrupt.oracle!r} to {maximum:g} raises "
            f"nothing: its max is {interrupt.max:g}."
        )
    approver = decision.get("approver")
    if approver is not None and approver not in interrupt.approvers:
        allowed = ", ".join(repr(a) for a in interrupt.approvers) or "nobody"
        raise ApplicationError(f"{approver!r} may not raise this limit (allowed: {allowed}).")


class InterruptClient:
    """``TemporalAgent``'s methods that decide a parked workflow's governance interrupts."""

    status: Callable[[Client, str], Awaitable[WorkflowStatus]]  # TemporalAgent's query

    async def resolve(
        self, client: Client, workflow_id: str, *resolutions: InterruptResolution
    ) -> list[str]:
        """Decide pending interrupts (``mutate``, ``deny``, ``retry``, ``result``).

        A ``mutate`` decision may leave out ``oracle``, ``limit_type`` and ``window``: the
        interrupt's limit is meant. Returns the interrupt ids still waiting; the run goes
        on once every interrupt and approval it waits for is decided.

        Raises:
            UserError: No decision, or the workflow refused one (an interrupt not waiting,
                decided already, a raise that raises nothing or by someone who may not).
        """
        return await route(
            client, workflow_id, self.status, resolutions, lambda r: r.interrupt_id,
            lambda handle, group: send_resolutions(handle, group, "TemporalAgent.resolve"),
            calls=False,
        )  # fmt: skip

    async def raise_budget(
        self,
        client: Client,
        workflow_id: str,
        interrupt_id: str,
        maximum: float,
        *,
        approver: str | None = None,
    ) -> list[str]:
        """Raise the limit interrupt ``interrupt_id`` waits on to ``maximum``, and go on.

        The raise is written beside the shared counters: every worker sees it (until the
        window it was granted in ends). The limit's rules (``mutable_by``, ``ceiling``)
        still judge it when the run resumes: a refused raise leaves the interrupt pending.
        Returns the interrupt ids still waiting.

        Raises:
            UserError: ``maximum`` is no number >= 0, or the workflow refused the raise.
        """
        resolution = raise_resolution(interrupt_id, maximum, approver)
        return await self.resolve(client, workflow_id, resolution)


def raise_resolution(
    interrupt_id: str, maximum: float, approver: str | None
) -> InterruptResolution:
    """The decision that raises a limit interrupt's max to ``maximum``.

    Raises:
        UserError: ``maximum`` is no number >= 0.
    """
    if isinstance(maximum, bool) or not isinstance(maximum, int | float):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"raise_budget needs a number maximum, got {maximum!r}.")
    if math.isnan(maximum) or maximum < 0:
        raise UserError(f"raise_budget needs a maximum >= 0, got {maximum!r}.")
    decision: dict[str, object] = {"decision": "mutate", "max": float(maximum)}
    if approver is not None:
        decision["approver"] = approver
    return InterruptResolution(interrupt_id=interrupt_id, decision=decision)


async def send_resolutions(
    handle: WorkflowHandle[object, object],
    resolutions: Sequence[InterruptResolution],
    who: str,
) -> list[str]:
    """Send decisions on interrupts to the workflow (the ``resolve`` update).

    Returns the interrupt ids still waiting.

    Raises:
        UserError: No decision, or the workflow refused one.
    """
    if not resolutions:
        raise UserError(f"{who} needs at least one InterruptResolution.")
    payload: list[WireResolution] = [
        {"interrupt_id": r.interrupt_id, "decision": _decision_data(r.decision)}
        for r in resolutions
    ]
    text = resolutions_adapter().dump_json(payload).decode()
    return await decision_update(handle, "resolve", text)


def _decision_data(decision: InterruptDecision | Mapping[str, object]) -> dict[str, object]:
    """A decision's fields, as the ``resolve`` update carries them."""
    if isinstance(decision, Mapping):
        return dict(decision)
    return {f.name: getattr(decision, f.name) for f in fields(decision)}  # a decision class
