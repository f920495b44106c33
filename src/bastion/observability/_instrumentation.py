"""The run tap that turns every run's events into OpenTelemetry spans and metrics."""

from __future__ import annotations

import warnings
from typing import TYPE_CHECKING

from opentelemetry import context as otel_context
from opentelemetry import metrics, trace
from opentelemetry.context import Context
from opentelemetry.propagate import get_global_textmap
from opentelemetry.trace import Span

from bastion.core import AgentEvent, AgentStartEvent, ListenerWarning

from ._metrics import metrics_for
from ._names import PARENT_RUN_ID, PARENT_TOOL_CALL_ID
from ._redact import Redactor
from ._run_spans import CONTENT_TYPES, SKIPPED_TYPES, RunSpans
from ._run_view import RunView
from ._settings import Settings

if TYPE_CHECKING:
    from ._light import LightTracer

__all__ = ["Instrumentation"]

SCOPE = "bastion"


class Instrumentation:
    """Spans and metrics for every run that starts while it is installed.

    Build it with :func:`bastion.observability.instrument`; it is the run tap.
    """

    __slots__ = ("_runs", "_settings", "_skipped", "needs_deltas")

    def __init__(
        self,
        *,
        tracer_provider: trace.TracerProvider | None,
        meter_provider: metrics.MeterProvider | None,
        redactor: Redactor | None,
        step_spans: bool = True,
    ) -> None:
        provider = trace.get_tracer_provider() if tracer_provider is None else tracer_provider
        tracer = _light(provider) or trace.get_tracer(SCOPE, tracer_provider=provider)
        meter = metrics.get_meter(SCOPE, meter_provider=meter_provider)
        self._settings = Settings(
            tracer=tracer, metrics=metrics_for(meter), redactor=redactor, step_spans=step_spans
        )
        self._runs: dict[str, RunSpans] = {}
        # Without content capture, the pieces of an answer change no span either: a run
        # nobody else watches does not even build them (the run tap's ``needs_deltas``).
        self._skipped = SKIPPED_TYPES if redactor is not None else SKIPPED_TYPES | CONTENT_TYPES
        self.needs_deltas = redactor is not None

    @property
    def capture_content(self) -> bool:
        """True when message content is recorded (redacted)."""
        return self._settings.redactor is not None

    def __call__(self, ctx: RunView, event: AgentEvent) -> None:
        if event.type in self._skipped:
            return
        try:
            if isinstance(event, AgentStartEvent):  # a run (or a resumed run's segment)
                self._start(ctx, event)
                return
            spans = self._runs.get(event.run_id)
            if spans is not None and spans.on_event(ctx, event):
                del self._runs[event.run_id]
        except Exception as exc:  # an observer must not break the run: a typed warning
            warnings.warn(
                f"Tracing failed on {event.type!r}: {type(exc).__name__}: {exc}",
                ListenerWarning,
                stacklevel=2,
            )

    def _start(self, ctx: RunView, event: AgentStartEvent) -> None:
        self._runs[event.run_id] = RunSpans.open(self._settings, ctx, event, self._parent(ctx))

    def _parent(self, ctx: RunView) -> Context:
        """A sub-agent run's parent: the tool span of the call that runs it."""
        parent_run = self._runs.get(str(ctx.metadata.get(PARENT_RUN_ID)))
        if parent_run is not None:
            call_id = ctx.metadata.get(PARENT_TOOL_CALL_ID)
            span = parent_run.span_for(call_id if isinstance(call_id, str) else None)
            return trace.set_span_in_context(span)
        return otel_context.get_current()

    def span(self, run_id: str, tool_call_id: str | None) -> Span | None:
        """The open span of a run's tool call (else its step or run), or ``None``."""
        spans = self._runs.get(run_id)
        return None if spans is None else spans.span_for(tool_call_id)

    def headers(self, run_id: str, tool_call_id: str | None) -> dict[str, str]:
        """W3C trace context headers (``traceparent``...) for a run's tool call."""
        span = self.span(run_id, tool_call_id)
        if span is None:
            return {}
        carrier: dict[str, str] = {}
        get_global_textmap().inject(carrier, context=trace.set_span_in_context(span))  # pyright: ignore[reportArgumentType]
        return carrier


def _light(provider: trace.TracerProvider) -> LightTracer | None:
    """The light tracer on an SDK provider (``None`` with the API alone, no SDK)."""
    try:
        from ._light import light_tracer
    except ImportError:  # opentelemetry-api without the SDK: not an SDK provider either
        return None
    return light_tracer(provider, SCOPE)
