"""Light spans (the fast path on an SDK provider) export what the SDK's own spans export."""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.sdk.trace.sampling import ALWAYS_ON, ParentBased, TraceIdRatioBased

from bastion import Agent, tool
from bastion.observability import instrument, uninstrument
from bastion.observability._light import LightTracer, light_tracer
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="pure")
def double(x: int) -> int:
    """Double a number.

    Args:
        x: The number.
    """
    return 2 * x


class Starts(SpanProcessor):
    """A processor that acts when a span starts: it gets the SDK's own spans."""

    def __init__(self) -> None:
        self.started: list[str] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        self.started.append(span.name)


_PER_RUN = {"bastion.run.id", "gen_ai.conversation.id"}  # ids that differ between runs


def _shape(spans: list[ReadableSpan]) -> list[tuple[Any, ...]]:
    """What a backend sees of each span: name, parent's name, kind, status, attributes."""
    names = {s.context.span_id: s.name for s in spans if s.context is not None}
    return sorted(
        (
            s.name,
            names.get(s.parent.span_id) if s.parent is not None else None,
            s.kind,
            s.status.status_code,
            tuple(sorted((k, v) for k, v in (s.attributes or {}).items() if k not in _PER_RUN)),
            len({s.context.trace_id for s in spans if s.context is not None}),
        )
        for s in spans
    )


async def _traced(provider: TracerProvider, *, light: bool = True) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert isinstance(light_tracer(provider, "bastion"), LightTracer) is light
    instrument(tracer_provider=provider)
    try:
        model = ScriptedModel([Turn(tool_calls=[Call("double", {"x": 21})]), "42."])
        result = await Agent("calc", model=model, tools=[double]).run("Double 21.")
        assert result.output == "42."
    finally:
        uninstrument()
    return list(exporter.get_finished_spans())


async def test_light_spans_match_the_sdks_own() -> None:
    light = await _traced(TracerProvider())

    watched = TracerProvider()
    starts = Starts()
    watched.add_span_processor(starts)
    sdk = await _traced(watched, light=False)  # its processor acts when a span starts

    assert len(starts.started) == len(sdk) == 6  # run, 2 steps, 2 model calls, 1 tool call
    assert _shape(light) == _shape(sdk)
    assert all(s.end_time is not None and s.start_time is not None for s in light)
    assert all(s.end_time >= s.start_time for s in light if s.end_time and s.start_time)


async def test_the_providers_sampler_decides() -> None:
    assert await _traced(TracerProvider(sampler=ParentBased(TraceIdRatioBased(0.0)))) == []
    every = await _traced(TracerProvider(sampler=ALWAYS_ON))  # not ParentBased: asked each time
    assert len(every) == 6


def test_no_light_tracer_for_a_provider_that_is_not_the_sdks() -> None:
    from opentelemetry.trace import NoOpTracerProvider

    assert light_tracer(NoOpTracerProvider(), "bastion") is None
    assert light_tracer(TracerProvider(), "bastion") is None  # no processor: nothing to feed
