"""``RunState``: the mutable state of one run, owned by the loop.

A suspended run's state is everything needed to continue it in another process: it
round-trips through JSON (``run_state_to_json`` / ``run_state_from_json``). The durability
layer rebuilds it from the journal.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from bastion.core import (
    AssistantMessage,
    Message,
    RunErrorInfo,
    RunStatus,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)
from bastion.governance import GovernorSnapshot, SuspendedInterrupt
from bastion.security import DataFlowLedger
from bastion.tools import ApprovalRequest

from ._result import RunResult, ToolCallRecord

if TYPE_CHECKING:
    from pydantic import ConfigDict

__all__ = ["PendingApproval", "RunState", "RunStatusError", "SuspendedStep"]

# Where a run may go from each status. A recovered run resumes a step while ``running``;
# ``aborted`` is settled by the run's end: calls still waiting for a human are held
# (``awaiting_approval``) or fail the run. The other statuses are final.
_NEXT: Mapping[RunStatus, frozenset[RunStatus]] = MappingProxyType(
    {
        "running": frozenset(
            {"running", "completed", "stopped", "failed", "aborted", "awaiting_approval"}
        ),
        "awaiting_approval": frozenset(
            {"running", "stopped", "failed", "aborted", "awaiting_approval"}
        ),
        "aborted": frozenset({"awaiting_approval", "failed"}),
    }
)


class RunStatusError(ValueError):
    """A run was asked to move to a status it cannot reach from its own (a bug, or bad data)."""


@dataclass(kw_only=True, slots=True)
class PendingApproval:
    """A tool call waiting for a human decision.

    Attributes:
        call: The call, as the model made it.
        step: The step it was made in.
        request: What the human is asked to decide (arguments, classification, reason).
    """

    call: ToolCall
    step: int
    request: ApprovalRequest | None = None


@dataclass(kw_only=True, slots=True)
class SuspendedStep:
    """The tool calls of the step a run suspended in.

    Attributes:
        calls: Every call of the step, in the order the model made them.
        results: Results of the calls that finished before the run suspended; the
            pending calls' results join them, in call order, when the run resumes.
    """

    calls: list[ToolCall] = field(default_factory=list[ToolCall])
    results: list[ToolMessage] = field(default_factory=list[ToolMessage])


@dataclass(kw_only=True, slots=True)
class RunState:
    """Everything a run has done so far."""

    # pydantic (``run_state_to_json``) may hold the live exception; it is never dumped.
    __pydantic_config__: ClassVar[ConfigDict] = {"arbitrary_types_allowed": True}

    run_id: str
    agent_name: str
    messages: list[Message] = field(default_factory=list)
    status: RunStatus = "running"
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    suspended: SuspendedStep | None = None
    output: Any = None
    error: RunErrorInfo | None = None
    exception: BaseException | None = None
    stop_reason: str | None = None
    suggestions: list[str] = field(default_factory=list[str])
    output_retries_used: int = 0
    # Final answers the verifiers sent back with feedback (``Verification.max_rounds``).
    verifier_rounds: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0
    last_seq: int = 0
    session_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    metadata: dict[str, Any] = field(default_factory=dict[str, Any])
    # Deferred tools found by tool_search, advertised from the next step (insertion order).
    promoted_tools: list[str] = field(default_factory=list[str])
    # True once an untrusted tool result entered the run: requests carry the inbound preamble.
    untrusted_seen: bool = False
    # Governance interrupts the run is suspended on (what each paused and the tool calls it
    # holds), and the governor's snapshot taken when it suspended, restored by a new Agent
    # instance on resume. States saved as plain dicts by earlier versions load into these.
    interrupts: list[SuspendedInterrupt] = field(default_factory=list[SuspendedInterrupt])
    governance: GovernorSnapshot | None = None
    # Provenance of what the run read, the plan and the policy violations (data-flow policy).
    dataflow: DataFlowLedger | None = None
    # The agent a handoff made active (``None``: the run's own agent), how many handoffs
    # the run made, and the step whose answer made the last one (0: none).
    active_agent: str | None = None
    handoffs: int = 0
    handoff_step: int = 0

    def add_usage(self, model: str, usage: Usage) -> None:
        """Count a model call's usage in the total and against its model."""
        by_model = self.usage_by_model
        total = self.usage
        previous = by_model.get(model)
        if not by_model:  # the first call: total and per-model usage are this call's
            self.usage = by_model[model] = usage
        elif previous is total:  # every call so far went to this model: one sum serves both
            self.usage = by_model[model] = total + usage
        else:
            self.usage = total + usage
            by_model[model] = usage if previous is None else previous + usage

    def fail(self, code: str, message: str, exception: BaseException | None = None) -> None:
        """End the run ``failed`` with an error (no output)."""
        self._move("failed")
        self.error = RunErrorInfo(code=code, message=message)
        self.exception = exception
        self.output = None

    def lose(self, code: str, message: str, exception: BaseException | None = None) -> None:
        """End the run ``failed`` whatever it reached: its end could not be journaled.

        Unlike :meth:`fail`, this also overrides ``completed`` or ``stopped``: a result the
        store never recorded must not be reported as done.
        """
        self.status = "failed"
        self.stop_reason = None
        self.error = RunErrorInfo(code=code, message=message)
        self.exception = exception
        self.output = None

    def complete(self, output: object) -> None:
        """End the run ``completed`` with its output."""
        self._move("completed")
        self.output = output

    def stop(self, reason: str, output: object) -> None:
        """End the run ``stopped`` (a limit or a hook; not an error), with the last answer."""
        self._move("stopped")
        self.stop_reason = reason
        self.output = output

    def close_step(self, suspended: SuspendedStep) -> None:
        """Complete the suspended step: every call has its result (or none was kept).

        The results join the messages in the order the model made the calls, and the
        step's call records are put back in that order too.
        """
        done = {message.tool_call_id: message for message in suspended.results}
        self.messages.extend(done[c.id] for c in suspended.calls if c.id in done)
        position = {call.id: i for i, call in enumerate(suspended.calls)}
        records = self.tool_calls
        start = len(records)
        while start > 0 and records[start - 1].id in position:
            start -= 1
        records[start:] = sorted(records[start:], key=lambda record: position[record.id])
        self.suspended = None

    def follow_up(self, message: UserMessage) -> None:
        """A completed turn is followed by ``message``: the run goes on with it.

        Raises:
            RunStatusError: The run has not completed.
        """
        if self.status != "completed":
            raise RunStatusError(f"Run {self.run_id} cannot take a follow-up: {self.status!r}.")
        self.status = "running"
        self.output = None
        self.messages.append(message)

    def abort(self) -> None:
        """The run was aborted by its caller."""
        self._move("aborted")

    def suspend(self) -> None:
        """Suspend the run until a directive decides what it waits for."""
        self._move("awaiting_approval")

    def resume(self) -> None:
        """Continue a suspended run."""
        self._move("running")

    def _move(self, to: RunStatus) -> None:
        if to not in _NEXT.get(self.status, ()):
            raise RunStatusError(
                f"Run {self.run_id} cannot go from status {self.status!r} to {to!r}."
            )
        self.status = to

    def last_text(self) -> str:
        """Text of the last assistant message."""
        for message in reversed(self.messages):
            if isinstance(message, AssistantMessage):
                return message.text
        return ""

    def result(self) -> RunResult[Any]:
        """Freeze the state into a :class:`RunResult`."""
        return RunResult(
            run_id=self.run_id,
            agent_name=self.agent_name,
            status=self.status,
            output=self.output,
            text=self.last_text(),
            messages=list(self.messages),
            usage=self.usage,
            usage_by_model=dict(self.usage_by_model),
            tool_calls=list(self.tool_calls),
            steps=self.step,
            duration=self.finished_at - self.started_at,
            error=self.error,
            stop_reason=self.stop_reason,
            suggestions=list(self.suggestions),
            exception=self.exception,
            pending_approvals=[p.request for p in self.pending_approvals if p.request],
            state=self,
            last_agent=self.active_agent or self.agent_name,
        )
