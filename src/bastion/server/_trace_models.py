"""The trace API's response bodies (pydantic, so OpenAPI describes them)."""

from __future__ import annotations

from datetime import datetime
from typing import Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, JsonValue

__all__ = ["SpanKind", "Trace", "TraceSpan", "TraceTokens"]

SpanKind: TypeAlias = Literal["run", "step", "model", "tool", "graph", "node"]


class _View(BaseModel):
    model_config = ConfigDict(frozen=True)


class TraceTokens(_View):
    """The tokens (and cost, when priced) a span used."""

    prompt: int
    completion: int
    cost_usd: float | None = None


class TraceSpan(_View):
    """One bar of the trace: a run, a step, a model call, a tool call, a graph or a node."""

    id: str
    kind: SpanKind
    name: str
    start: float = Field(description="Seconds from the trace's start.")
    end: float | None = Field(description="Seconds from the trace's start; null while open.")
    status: str = Field(description="running, ok, error, awaiting_approval, or a run status.")
    tokens: TraceTokens | None = None
    error: str | None = None
    attributes: dict[str, JsonValue] = Field(default_factory=dict[str, JsonValue])
    children: list[TraceSpan] = Field(default_factory=list["TraceSpan"])


class Trace(_View):
    """The span tree of a run or a graph execution, from its logged events."""

    id: str
    kind: Literal["run", "execution"]
    started_at: datetime | None = Field(description="When its first event was logged.")
    duration: float = Field(description="Seconds from the first to the last logged event.")
    live: bool = Field(description="Whether it is still going on (fetch again for more).")
    spans: list[TraceSpan]
