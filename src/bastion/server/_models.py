"""The request and response bodies of the HTTP API (pydantic, so OpenAPI describes them)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from bastion.core import RunStatus
from bastion.stores import MAX_SEQ

__all__ = [
    "Accepted",
    "ApprovalIn",
    "Decision",
    "ErrorBody",
    "ErrorInfo",
    "InterruptIn",
    "PendingItem",
    "RaiseBudget",
    "ResumeRun",
    "RunList",
    "RunView",
    "StartRun",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class StartRun(_Body):
    """Start a run of one of the served agents."""

    agent: str | None = Field(
        default=None, description="The agent's name; may be left out when one agent is served."
    )
    input: str = Field(min_length=1, description="The user's message.")
    session_id: str | None = Field(default=None, description="Conversation id (default: new).")
    metadata: dict[str, JsonValue] = Field(
        default_factory=dict[str, JsonValue], description="Free-form values the run's tools read."
    )


class ApprovalIn(_Body):
    """A decision on one pending tool call."""

    tool_call_id: str = Field(min_length=1)
    granted: bool
    reason: str | None = None
    arguments: dict[str, JsonValue] | None = None
    result: str | None = Field(
        default=None, description="Record this result instead of running the call."
    )


class InterruptIn(_Body):
    """A decision on one pending budget interrupt (the library's JSON decision form)."""

    interrupt_id: str = Field(min_length=1)
    decision: dict[str, JsonValue] = Field(
        description='e.g. {"decision": "deny", "reason": "…"} or {"decision": "mutate", …}'
    )


class ResumeRun(_Body):
    """Every decision a suspended run waits for."""

    approvals: list[ApprovalIn] = Field(default_factory=list[ApprovalIn])
    interrupts: list[InterruptIn] = Field(default_factory=list[InterruptIn])


class Decision(_Body):
    """Approve or deny one pending item."""

    reason: str | None = Field(default=None, description="Shown to the model when denied.")
    result: str | None = Field(
        default=None, description="Approve only: the call happened; record this result."
    )


class RaiseBudget(_Body):
    """Raise the limit a budget interrupt stopped at, and retry."""

    max: float = Field(ge=0, description="The new limit.")


class PendingItem(BaseModel):
    """A tool call or a budget interrupt a suspended run waits for."""

    id: str
    kind: Literal["call", "interrupt"]
    run_id: str
    reason: str
    tool_name: str | None = None
    arguments: dict[str, object] | None = Field(default=None, description="The call's arguments.")
    limit: dict[str, object] | None = Field(default=None, description="The interrupt, flat.")


class RunView(BaseModel):
    """A run, as its journal tells it."""

    run_id: str
    agent: str
    status: str
    tenant_id: str | None
    session_id: str | None
    metadata: dict[str, object]
    created_at: datetime
    updated_at: datetime
    output: object = Field(default=None, description="The run's output (its output type's JSON).")
    error: dict[str, str] | None = None
    usage: dict[str, object]
    pending: list[PendingItem]


class RunQuery(BaseModel):
    """The filters and the page of ``GET /runs`` (query parameters)."""

    agent: str | None = Field(default=None, description="Only this agent's runs.")
    status: RunStatus | None = Field(default=None, description="Only runs with this status.")
    tenant: str | None = Field(default=None, description="Only this tenant's runs.")
    limit: int = Field(default=50, ge=1, le=500, description="At most this many runs.")
    offset: int = Field(default=0, ge=0, le=MAX_SEQ, description="Skip this many first.")


class RunList(BaseModel):
    """One page of runs, newest first."""

    runs: list[RunView]
    next_offset: int | None = Field(description="The offset of the next page; null at the end.")


class Accepted(BaseModel):
    """A run (or its next segment) started; follow it at ``events``."""

    run_id: str
    agent: str
    events: str
    undecided: list[str] = Field(
        default_factory=list[str], description="Items still waiting for a decision."
    )
    resumed: bool = True


class ErrorInfo(BaseModel):
    """What went wrong: the library's error class and its message."""

    type: str
    message: str
    detail: list[JsonValue] | None = None


class ErrorBody(BaseModel):
    """Every error response."""

    error: ErrorInfo
