"""``RunResult``: what a finished (or suspended) run returns, and the per-call records."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Generic

from bastion.core import Message, RunErrorInfo, RunFailed, RunStatus, ToolErrorKind, Usage
from bastion.tools import ApprovalRequest

if TYPE_CHECKING:
    from ._state import RunState

__all__ = ["OutputT", "RunResult", "ToolCallRecord"]

if TYPE_CHECKING:  # PEP 696 default for type checkers only (see core._context)
    from typing_extensions import TypeVar

    OutputT = TypeVar("OutputT", default=str)
else:
    from typing import TypeVar

    OutputT = TypeVar("OutputT")


@dataclass(kw_only=True, slots=True)
class ToolCallRecord:
    """One tool call of a run and its outcome."""

    id: str
    name: str
    arguments: str
    result: str
    is_error: bool
    step: int
    error_kind: ToolErrorKind | None = None
    duration: float = 0.0


@dataclass(kw_only=True, slots=True)
class RunResult(Generic[OutputT]):
    """The outcome of a run.

    Attributes:
        run_id: Id of the run.
        agent_name: Name of the agent.
        status: ``completed``, ``failed``, ``aborted``, ``stopped`` or ``awaiting_approval``.
        output: The output: a string, or an instance of the agent's ``output_type``.
            ``None`` when the run did not complete.
        text: The text of the model's last answer.
        messages: The whole conversation, system prompt first.
        usage: Usage summed over every model call.
        usage_by_model: Usage per ``"<provider>:<model>"``.
        tool_calls: Every tool call with its result, in call order.
        steps: How many model calls the run made.
        duration: Seconds from start to end.
        error: Why the run failed, when it did.
        stop_reason: Why a ``stopped`` run stopped: ``"max_steps"`` or ``"hook"``.
        suggestions: What the user may ask next (``RunOptions(suggestions=...)``), after a
            completed run.
        exception: The exception behind a failure, for debugging.
        pending_approvals: With status ``awaiting_approval``: the calls waiting for a
            human decision. Resume with ``agent.run(result.state, directive=...)``.
        state: The run's state: pass it back to resume a suspended run, or keep it with
            ``run_state_to_json``.
        last_agent: The agent active when the run ended: the one that produced ``output``
            (after handoffs, the last target; else ``agent_name``).
    """

    run_id: str
    agent_name: str
    status: RunStatus
    output: OutputT | None
    text: str
    messages: list[Message]
    usage: Usage
    usage_by_model: dict[str, Usage]
    tool_calls: list[ToolCallRecord]
    steps: int
    duration: float
    error: RunErrorInfo | None = None
    stop_reason: str | None = None
    suggestions: list[str] = field(default_factory=list[str])
    exception: BaseException | None = field(default=None, repr=False)
    pending_approvals: list[ApprovalRequest] = field(default_factory=list[ApprovalRequest])
    state: RunState | None = field(default=None, repr=False)
    last_agent: str = ""

    def __post_init__(self) -> None:
        if not self.last_agent:
            self.last_agent = self.agent_name

    @property
    def ok(self) -> bool:
        """True when the run completed."""
        return self.status == "completed"

    def raise_for_status(self) -> RunResult[OutputT]:
        """Return self when completed; otherwise raise :class:`RunFailed`.

        Raises:
            RunFailed: With the run's error code, chained to the original exception.
        """
        if self.status == "completed":
            return self
        code = self.error.code if self.error else self.status
        message = self.error.message if self.error else f"run ended with status {self.status!r}"
        raise RunFailed(
            f"Run {self.run_id} {self.status}: {message}", code=code
        ) from self.exception
