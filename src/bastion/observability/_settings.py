"""What every run's spans share: the tracer, metrics and content settings, and links."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from opentelemetry import trace
from opentelemetry.trace import Link, Span, SpanKind

from ._metrics import GenAIMetrics
from ._names import CONTINUES, chat_attributes, split_model
from ._redact import Redactor
from ._run_view import RunView

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

    from ._light import LightTracer

__all__ = ["Settings", "continued"]


@dataclass(frozen=True, kw_only=True)
class Settings:
    """What the instrumentation records, shared by every run."""

    tracer: trace.Tracer | LightTracer  # light: SDK spans built without the SDK's overhead
    metrics: GenAIMetrics
    redactor: Redactor | None  # None: message content is not captured
    step_spans: bool = True  # False: model and tool calls are children of the run's span
    # A model call's span name and starting attributes, by model (built once each).
    chats: dict[str, tuple[str, dict[str, str]]] = field(
        default_factory=dict[str, tuple[str, dict[str, str]]]
    )

    def child(
        self, name: str, parent: Span, kind: SpanKind, attributes: dict[str, AttributeValue]
    ) -> Span:
        """A span below ``parent`` (the light tracer builds no context object for it)."""
        tracer = self.tracer
        start_child = getattr(tracer, "start_child", None)
        if start_child is not None:
            found: Span = start_child(name, parent, kind, attributes)
            return found
        context = trace.set_span_in_context(parent)
        return tracer.start_span(name, context=context, kind=kind, attributes=attributes)

    def chat(self, model: str) -> tuple[str, dict[str, AttributeValue]]:
        """A model call's span name and a fresh copy of its starting attributes."""
        found = self.chats.get(model)
        if found is None:
            found = self.chats[model] = (f"chat {split_model(model)[1]}", chat_attributes(model))
        attributes: dict[str, AttributeValue] = dict(found[1])
        return found[0], attributes


def continued(ctx: RunView) -> list[Link]:
    """A link to the span of the run segment this resumed run continues, when recorded."""
    stored = ctx.metadata.get(CONTINUES)
    if not isinstance(stored, dict):
        return []
    try:
        trace_id = int(str(stored["trace_id"]), 16)  # pyright: ignore[reportUnknownArgumentType]
        span_id = int(str(stored["span_id"]), 16)  # pyright: ignore[reportUnknownArgumentType]
    except (KeyError, ValueError):
        return []
    context = trace.SpanContext(trace_id, span_id, is_remote=True)
    return [Link(context, {"bastion.link": "resumed_from"})]
