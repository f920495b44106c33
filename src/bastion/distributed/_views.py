"""What a client reads of an agent workflow: its result and its status, as JSON text."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Any, Generic, Literal, TypeAlias, TypeVar

from pydantic import TypeAdapter

from bastion.core import RunErrorInfo, Usage
from bastion.tools import ApprovalDecision, ApprovalRequest

from ._interrupts import WorkflowInterrupt

__all__ = [
    "ChildWaiting",
    "WorkflowResult",
    "WorkflowStatus",
    "WorkflowStatusName",
    "decisions_adapter",
    "result_adapter",
    "status_adapter",
    "waiting_adapter",
]

OutputT = TypeVar("OutputT")

WorkflowStatusName: TypeAlias = Literal[
    "running", "awaiting_approval", "completed", "failed", "aborted", "stopped"
]


@dataclass(kw_only=True, slots=True, frozen=True)
class WorkflowResult(Generic[OutputT]):
    """How an agent workflow ended.

    Attributes:
        workflow_id: The workflow's id.
        run_id: The Bastion run's id (made from the workflow's deterministic ids).
        status: ``completed``, ``failed``, ``aborted`` or ``stopped``.
        output: The output, validated as the agent's ``output_type``.
        text: The text of the model's last answer.
        usage: Usage summed over every model call.
        steps: How many model calls the run made.
        error: Why the run failed, when it did.
    """

    workflow_id: str = ""
    run_id: str
    status: WorkflowStatusName
    output: OutputT | None
    text: str
    usage: Usage
    steps: int
    error: RunErrorInfo | None = None

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.status == "completed"


@dataclass(kw_only=True, slots=True, frozen=True)
class ChildWaiting:
    """A sub-agent's workflow, below a run, that waits for decisions.

    Attributes:
        workflow_id: The workflow the calls and interrupts wait in (decided there).
        agent: The sub-agent's name.
        pending: Its calls waiting for a decision.
        interrupts: Its governance interrupts waiting for a decision.
    """

    workflow_id: str
    agent: str
    pending: list[ApprovalRequest] = field(default_factory=list[ApprovalRequest])
    interrupts: list[WorkflowInterrupt] = field(default_factory=list[WorkflowInterrupt])


@dataclass(kw_only=True, slots=True, frozen=True)
class WorkflowStatus:
    """What an agent workflow is doing now (its ``status`` query).

    Attributes:
        status: ``running``, ``awaiting_approval`` (the run, or a sub-agent below it, waits
            for decisions), or how the run ended.
        pending: The calls waiting for a decision: the run's own, then its sub-agents'.
        usage: Usage of the model calls made so far.
        interrupts: The governance interrupts waiting for a decision (a budget reached),
            the run's own, then its sub-agents'.
        children: The sub-agent workflows among those waiting, with what each waits for:
            ``TemporalAgent.decide`` and ``resolve`` on the run send each decision there.
    """

    status: WorkflowStatusName
    pending: list[ApprovalRequest] = field(default_factory=list[ApprovalRequest])
    usage: Usage = field(default_factory=Usage)
    interrupts: list[WorkflowInterrupt] = field(default_factory=list[WorkflowInterrupt])
    children: list[ChildWaiting] = field(default_factory=list[ChildWaiting])


@cache
def result_adapter() -> TypeAdapter[WorkflowResult[Any]]:
    """The adapter of the workflow's result (output as plain JSON)."""
    return TypeAdapter(WorkflowResult[Any])


@cache
def status_adapter() -> TypeAdapter[WorkflowStatus]:
    """The adapter of the status query's answer."""
    return TypeAdapter(WorkflowStatus)


@cache
def decisions_adapter() -> TypeAdapter[list[ApprovalDecision]]:
    """The adapter of the decisions an update carries."""
    return TypeAdapter(list[ApprovalDecision])


@cache
def waiting_adapter() -> TypeAdapter[list[ChildWaiting]]:
    """The adapter of what a sub-agent's workflow reports to its parent as waiting."""
    return TypeAdapter(list[ChildWaiting])
