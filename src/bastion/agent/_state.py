"""``RunState``: the mutable state of one run, owned by the loop.

The durability layer rebuilds it from the journal; here it lives in memory.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from bastion.core import (
    AssistantMessage,
    Message,
    RunErrorInfo,
    RunStatus,
    ToolCall,
    Usage,
)

from ._result import RunResult, ToolCallRecord

__all__ = ["PendingApproval", "RunState"]


@dataclass(kw_only=True, slots=True)
class PendingApproval:
    """A tool call waiting for a human decision."""

    call: ToolCall
    step: int


@dataclass(kw_only=True, slots=True)
class RunState:
    """Everything a run has done so far."""

    run_id: str
    agent_name: str
    messages: list[Message] = field(default_factory=list)
    status: RunStatus = "running"
    step: int = 0
    usage: Usage = field(default_factory=Usage)
    usage_by_model: dict[str, Usage] = field(default_factory=dict)
    tool_calls: list[ToolCallRecord] = field(default_factory=list)
    pending_approvals: list[PendingApproval] = field(default_factory=list)
    output: Any = None
    error: RunErrorInfo | None = None
    exception: BaseException | None = None
    stop_reason: str | None = None
    output_retries_used: int = 0
    started_at: float = 0.0
    finished_at: float = 0.0

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
        """Mark the run failed."""
        self.status = "failed"
        self.error = RunErrorInfo(code=code, message=message)
        self.exception = exception
        self.output = None

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
            exception=self.exception,
        )
