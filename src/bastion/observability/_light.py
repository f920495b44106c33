"""Light spans: a run's spans as plain ``ReadableSpan`` s, handed to the processors at their end.

The OpenTelemetry SDK's own span (``Tracer.start_span``) costs tens of µs in CPython: locks,
attribute validation and bounding on every write, processor callbacks at its start. A
run's spans have a fixed, known shape (a few scalar attributes set by Bastion itself), so
when the tracer provider is the SDK's and its span processors do nothing when a span
starts (``BatchSpanProcessor``, ``SimpleSpanProcessor``), Bastion keeps each open span as a
``ReadableSpan`` with plain fields and, at its end, hands it to the provider's processors,
which export it as they would any other. The sampler, the id generator and the
resource are the provider's, used exactly as its tracer uses them. Any other provider or
processor gets the SDK's tracer (:func:`light_tracer` returns ``None``).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import cast

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import Event, ReadableSpan, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.sampling import ParentBased
from opentelemetry.sdk.util.instrumentation import InstrumentationScope
from opentelemetry.trace import Link, SpanContext, SpanKind, Status, StatusCode, TraceFlags
from opentelemetry.util.types import Attributes, AttributeValue

__all__ = ["LightTracer", "light_tracer"]

_QUIET_ON_START = (BatchSpanProcessor, SimpleSpanProcessor)
_UNSET = Status(StatusCode.UNSET)


def light_tracer(provider: object, scope: str) -> LightTracer | None:
    """A light tracer on ``provider``; ``None`` when it must get the SDK's own spans.

    That is: not an SDK ``TracerProvider``, a processor that may act when a span starts
    (anything but the SDK's batch and simple processors), or a provider built in a way
    this SDK version does not expose as expected.
    """
    if not isinstance(provider, TracerProvider):
        return None
    multi = getattr(provider, "_active_span_processor", None)
    processors: object = getattr(multi, "_span_processors", None)
    if not isinstance(processors, tuple) or not processors:
        return None
    chosen: list[SpanProcessor] = []
    for processor in processors:  # pyright: ignore[reportUnknownVariableType]
        if not isinstance(processor, _QUIET_ON_START):
            return None
        chosen.append(processor)
    tracer = provider.get_tracer(scope)
    if isinstance(tracer, trace.NoOpTracer) or not getattr(tracer, "_is_enabled", lambda: True)():
        return None
    return LightTracer(provider, tuple(chosen), InstrumentationScope(scope))


class LightTracer:
    """Starts :class:`LightSpan` s the way the SDK's tracer starts its spans."""

    __slots__ = ("_ids", "_inherits", "_processors", "_provider", "_resource", "_scope")

    def __init__(
        self,
        provider: TracerProvider,
        processors: tuple[SpanProcessor, ...],
        scope: InstrumentationScope,
    ) -> None:
        self._provider = provider
        self._processors = processors
        self._scope = scope
        self._resource = provider.resource
        self._ids = provider.id_generator
        # The default sampler (and any ParentBased one that samples below a sampled local
        # parent): a child of a sampled span of ours is sampled, no question asked.
        sampler = provider.sampler
        self._inherits = isinstance(sampler, ParentBased) and (
            "localParentSampled:AlwaysOnSampler" in sampler.get_description()
        )

    def start_span(
        self,
        name: str,
        context: Context | None = None,
        kind: SpanKind = SpanKind.INTERNAL,
        attributes: dict[str, AttributeValue] | None = None,
        links: Sequence[Link] = (),
    ) -> trace.Span:
        """A span below the span in ``context`` (a new trace without one); sampled or not.

        ``attributes`` is the caller's fresh dict: the span keeps it (no copy).
        """
        parent_span = trace.get_current_span(context)
        parent = parent_span.get_span_context()
        if isinstance(parent_span, LightSpan) and self._inherits:  # a sampled local parent
            span_context = SpanContext(
                parent.trace_id,
                self._ids.generate_span_id(),
                is_remote=False,
                trace_flags=parent.trace_flags,
                trace_state=parent.trace_state,
            )
            return LightSpan(self, name, span_context, parent, kind, attributes or {}, links)
        return self._sampled_span(name, context, parent, kind, attributes or {}, links)

    def start_child(
        self, name: str, parent: trace.Span, kind: SpanKind, attributes: dict[str, AttributeValue]
    ) -> trace.Span:
        """A span below ``parent`` (no context object is built for a light parent)."""
        if self._inherits and isinstance(parent, LightSpan):
            context = parent.get_span_context()
            span_context = SpanContext(
                context.trace_id,
                self._ids.generate_span_id(),
                False,
                context.trace_flags,
                context.trace_state,
            )
            return LightSpan(self, name, span_context, context, kind, attributes, ())
        return self.start_span(name, trace.set_span_in_context(parent), kind, attributes)

    def _sampled_span(  # noqa: PLR0917 - start_span's arguments, resolved
        self,
        name: str,
        context: Context | None,
        parent: SpanContext,
        kind: SpanKind,
        attributes: dict[str, AttributeValue],
        links: Sequence[Link],
    ) -> trace.Span:
        ids = self._ids
        if parent.is_valid:
            trace_id, random_id = parent.trace_id, parent.trace_flags.random_trace_id
        else:
            trace_id, random_id = ids.generate_trace_id(), ids.is_trace_id_random()
        sampler = self._provider.sampler
        sampled = sampler.should_sample(context, trace_id, name, kind, attributes, links)
        flags = TraceFlags.SAMPLED if sampled.decision.is_sampled() else TraceFlags.DEFAULT
        if random_id:
            flags |= TraceFlags.RANDOM_TRACE_ID
        span_context = SpanContext(
            trace_id,
            ids.generate_span_id(),
            is_remote=False,
            trace_flags=TraceFlags(flags),
            trace_state=sampled.trace_state,
        )
        if not sampled.decision.is_recording():
            return trace.NonRecordingSpan(span_context)
        extra = cast("Mapping[str, AttributeValue] | None", sampled.attributes)
        if extra:
            attributes.update(extra)
        return LightSpan(
            self, name, span_context, parent if parent.is_valid else None, kind, attributes, links
        )

    @property
    def processors(self) -> tuple[SpanProcessor, ...]:
        """The provider's processors: each finished span goes to their ``on_end``."""
        return self._processors

    @property
    def resource(self) -> Resource:
        """The provider's resource."""
        return self._resource

    @property
    def scope(self) -> InstrumentationScope:
        """The instrumentation scope of every span."""
        return self._scope


class LightSpan(trace.Span, ReadableSpan):  # pyright: ignore[reportIncompatibleMethodOverride]
    """A span that is its own ``ReadableSpan``, as the SDK's own span is.

    Plain fields while it is open; handed to the processors as it is when it ends (no copy).
    """

    def __init__(  # noqa: PLR0917 - one span's parts, as the SDK's own span takes them
        self,
        tracer: LightTracer,
        name: str,
        context: SpanContext,
        parent: SpanContext | None,
        kind: SpanKind,
        attributes: dict[str, AttributeValue],
        links: Sequence[Link],
    ) -> None:
        # The fields ``ReadableSpan`` reads (its ``__init__`` would only set them too).
        self._tracer = tracer
        self._name = name
        self._context = context
        self._parent = parent
        self._kind = kind
        self._attributes = attributes
        self._links = tuple(links)
        self._events: tuple[Event, ...] = ()
        self._status = _UNSET
        self._resource = tracer.resource
        self._instrumentation_scope = tracer.scope
        self._instrumentation_info = None
        self._start_time = time.time_ns()
        self._end_time: int | None = None

    def get_span_context(self) -> SpanContext:
        """The span's ids and flags."""
        return self._context

    def is_recording(self) -> bool:
        """True until the span ends."""
        return self._end_time is None

    def set_attributes(self, attributes: Mapping[str, AttributeValue]) -> None:
        """Set attributes (sequences are kept as tuples, as the SDK keeps them)."""
        if self._end_time is None:
            for key, value in attributes.items():
                self._attributes[key] = tuple(value) if isinstance(value, list) else value

    def set_attribute(self, key: str, value: AttributeValue) -> None:
        """Set one attribute."""
        if self._end_time is None:
            self._attributes[key] = tuple(value) if isinstance(value, list) else value

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        """Add a span event (now, unless ``timestamp`` says when)."""
        if self._end_time is None:
            event = Event(name, attributes, timestamp or time.time_ns())
            self._events = (*self._events, event)

    def add_link(self, context: SpanContext, attributes: Attributes = None) -> None:
        """Add a link to another span."""
        if self._end_time is None:
            self._links = (*self._links, Link(context, attributes))

    def update_name(self, name: str) -> None:
        """Rename the span."""
        if self._end_time is None:
            self._name = name

    def set_status(self, status: Status | StatusCode, description: str | None = None) -> None:
        """Set the status (an ``OK`` one is final, as in the SDK)."""
        if self._end_time is not None or self._status.status_code is StatusCode.OK:
            return
        self._status = status if isinstance(status, Status) else Status(status, description)

    def record_exception(
        self,
        exception: BaseException,
        attributes: Attributes = None,
        timestamp: int | None = None,
        escaped: bool = False,
    ) -> None:
        """Record an exception as a span event, as the SDK does."""
        found: dict[str, AttributeValue] = {
            "exception.type": type(exception).__qualname__,
            "exception.message": str(exception),
            "exception.escaped": str(escaped),
        }
        found.update(attributes or {})
        self.add_event("exception", found, timestamp)

    def end(self, end_time: int | None = None) -> None:
        """End the span: it goes to the processors, as it is, once; it changes no more."""
        if self._end_time is not None:
            return
        self._end_time = end_time or time.time_ns()
        for processor in self._tracer.processors:
            processor.on_end(self)
