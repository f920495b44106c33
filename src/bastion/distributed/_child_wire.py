"""What crosses between a parent workflow and a child workflow, as JSON text."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Literal

from pydantic import TypeAdapter

from bastion.agent._result import RunResult
from bastion.core import RunErrorInfo, RunStatus, Usage
from bastion.multi import ChildBudget

__all__ = [
    "ChildOutcome",
    "ChildRequest",
    "child_workflow_name",
    "outcome_adapter",
    "request_adapter",
    "request_json",
]


def child_workflow_name(agent_name: str) -> str:
    """The workflow type of the child runs of agent ``agent_name``."""
    return f"bastion.agent.{agent_name}.child"


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildRequest:
    """What a parent asks of a child workflow."""

    input: str
    kind: Literal["subagent", "fan_out"]
    label: str
    capability: Literal["full", "read_only"] = "full"
    budget: ChildBudget | None = None
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    history: str | None = None
    """The messages the child starts with (a sub-agent's ``input_filter``), as JSON."""


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildOutcome:
    """How a child workflow's run ended (``output`` as plain JSON)."""

    run_id: str
    agent_name: str
    status: RunStatus
    output: object = None
    text: str = ""
    texts: list[str] = field(default_factory=list[str])
    error: RunErrorInfo | None = None
    stop_reason: str | None = None
    usage: Usage = field(default_factory=Usage)
    usage_by_model: dict[str, Usage] = field(default_factory=dict[str, Usage])
    steps: int = 0
    untrusted: bool = False

    def as_result(self) -> RunResult[object]:
        """The child's run as a ``RunResult`` (no messages: they stay in its history)."""
        return RunResult(
            run_id=self.run_id,
            agent_name=self.agent_name,
            status=self.status,
            output=self.output,
            text=self.text,
            messages=[],
            usage=self.usage,
            usage_by_model=self.usage_by_model,
            tool_calls=[],
            steps=self.steps,
            duration=0.0,
            error=self.error,
            stop_reason=self.stop_reason,
        )


@cache
def request_adapter() -> TypeAdapter[ChildRequest]:
    """The adapter of a child workflow's input."""
    return TypeAdapter(ChildRequest)


@cache
def outcome_adapter() -> TypeAdapter[ChildOutcome]:
    """The adapter of a child workflow's result."""
    return TypeAdapter(ChildOutcome)


def request_json(request: ChildRequest) -> str:
    """``request`` as the child workflow's input."""
    return request_adapter().dump_json(request).decode()
