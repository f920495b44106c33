"""What a client reads of an agent workflow: its result and its status, as JSON text."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Generic, Literal, TypeAlias, TypeVar, cast

from pydantic import TypeAdapter

from bastion.core import JsonObject, RunErrorInfo, Usage
from bastion.tools import ApprovalDecision, ApprovalRequest

if TYPE_CHECKING:
    from bastion.governance import SuspendedInterrupt


__all__ = [
    "ChildWaiting",
    "WorkflowResult",
    "WorkflowStatus",
    "WorkflowInterrupt",
    "WorkflowStatusName",
    "decisions_adapter",
    "interrupt_view",
    "interrupts_adapter",
    "result_adapter",
    "status_adapter",
    "waiting_adapter",
]

OutputT = TypeVar("OutputT")

WorkflowStatusName: TypeAlias = Literal[
    "running", "awaiting_approval", "completed", "failed", "aborted", "stopped"
]


@dataclass(kw_only=True, slots=True, frozen=True)
class WorkflowInterrupt:
    """A governance interrupt a parked workflow waits on (in its ``status``).

    Attributes:
        id: The interrupt's id: what ``raise_budget`` / ``resolve`` decide.
        kind: ``limit`` (a mutable limit was reached) or ``policy``.
        on: What it paused: a ``model`` call, a ``tool`` call or a tool-call ``round``.
        action: The oracle key of the paused action (``llm:<provider>:<model>``, ...).
        oracle: The key owning the limit.
        limit_type: The limit's type (``cost``, ``calls``, ...), for a limit.
        window: The limit's window label.
        current: The counter when the limit was checked.
        max: The limit's max then.
        approvers: Who may raise it.
        reason: A sentence for humans.
        tool_call_ids: The tool calls it holds.
    """

    id: str
    kind: Literal["limit", "policy"]
    on: Literal["model", "tool", "round"]
    action: str
    oracle: str
    limit_type: str | None = None
    window: str | None = None
    current: float | None = None
    max: float | None = None
    approvers: tuple[str, ...] = ()
    reason: str = ""
    tool_call_ids: tuple[str, ...] = ()

    def to_dict(self) -> JsonObject:
        """The flat JSON form the CLI's ``--raise`` reads (as a journaled interrupt's)."""
        return cast("JsonObject", interrupts_adapter().dump_python([self], mode="json")[0])


def interrupt_view(item: SuspendedInterrupt) -> WorkflowInterrupt:
    """The view of a parked interrupt in a workflow's status."""
    interrupt = item.interrupt
    return WorkflowInterrupt(
        id=interrupt.id,
        kind=interrupt.kind,
        on=item.on,
        action=interrupt.action,
        oracle=interrupt.oracle,
        limit_type=interrupt.limit_type,
        window=interrupt.window,
        current=interrupt.current,
        max=interrupt.max,
        approvers=interrupt.approvers,
        reason=interrupt.reason,
        tool_call_ids=item.tool_call_ids,
    )


@cache
def interrupts_adapter() -> TypeAdapter[list[WorkflowInterrupt]]:
    """The adapter of interrupt views."""
    return TypeAdapter(list[WorkflowInterrupt])


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
def result_adapter() -> TypeAdapter[WorkflowResult[object]]:
    """The adapter of the workflow's result (output as plain JSON)."""
    return TypeAdapter(WorkflowResult[object])


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
