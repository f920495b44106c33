"""What reaches an exporter is the same on the fast paths as through the SDK's own API.

Spans: light spans against the SDK's own spans, compared field by field in the OTLP
protobuf an OTLP exporter sends (ids and times aside). Metrics: the queued values against
the same values recorded straight on an SDK histogram, point by point.
"""

from __future__ import annotations

from typing import Any

from opentelemetry.context import Context
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.metrics import Meter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from bastion import Agent, tool
from bastion.agent import ModelOptions
from bastion.core import Overloaded, Usage
from bastion.observability import instrument, uninstrument
from bastion.observability._light import LightTracer, light_tracer
from bastion.observability._metrics import FLUSH_AT, GenAIMetrics
from bastion.testing import Call, ScriptedModel, Turn

RESOURCE = Resource.create({"service.name": "parity"})
PER_RUN = {"bastion.run.id", "gen_ai.conversation.id"}  # ids that differ between runs


@tool(side_effect_class="read_only")
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(side_effect_class="read_only")
def broken() -> str:
    """Always fails."""
    raise RuntimeError("disk on fire")


class Starts(SpanProcessor):
    """Acts when a span starts: its provider gets the SDK's own spans."""

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        pass


async def _run(provider: TracerProvider, *, light: bool) -> list[ReadableSpan]:
    exporter = InMemorySpanExporter()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    assert isinstance(light_tracer(provider, "bastion"), LightTracer) is light
    instrument(tracer_provider=provider)
    try:
        busy = Turn(error=Overloaded("busy", status=503))
        primary = ScriptedModel([busy, busy], name="primary")  # each step falls back
        script: list[Turn | str] = [
            Turn(
                tool_calls=[
                    Call("weather", {"city": "Oslo"}, id="c1"),
                    Call("broken", {}, id="c2"),
                ],
                usage=Usage(prompt_tokens=10, completion_tokens=3),
            ),
            Turn(text="Sunny.", usage=Usage(prompt_tokens=20, completion_tokens=2)),
        ]
        backup = ScriptedModel(script, name="backup")
        agent = Agent(
            "parity",
            model=primary,
            retry=None,
            tools=[weather, broken],
            model_options=ModelOptions(fallbacks=[backup]),
        )
        assert (await agent.run("Weather?")).output == "Sunny."
    finally:
        uninstrument()
    return list(exporter.get_finished_spans())


def _otlp(spans: list[ReadableSpan]) -> list[dict[str, Any]]:
    """Each span as the OTLP protobuf has it, ids by name, times and run ids left out."""
    request = encode_spans(spans)
    (resource_spans,) = request.resource_spans
    (scope_spans,) = resource_spans.scope_spans
    names = {s.span_id: s.name for s in scope_spans.spans}
    found: list[dict[str, Any]] = []
    for s in scope_spans.spans:
        attributes = {a.key: str(a.value) for a in s.attributes if a.key not in PER_RUN}
        found.append(
            {
                "name": s.name,
                "parent": names.get(s.parent_span_id),
                "kind": s.kind,
                "status": (s.status.code, s.status.message),
                "attributes": attributes,
                "events": [
                    (e.name, sorted((a.key, str(a.value)) for a in e.attributes)) for e in s.events
                ],
                "links": len(s.links),
                "flags": s.flags,
                "dropped": (s.dropped_attributes_count, s.dropped_events_count),
                "trace_state": s.trace_state,
                "ordered": 0 < s.start_time_unix_nano <= s.end_time_unix_nano,
            }
        )
    resource = sorted((a.key, str(a.value)) for a in resource_spans.resource.attributes)
    scope = (scope_spans.scope.name, scope_spans.scope.version)
    return [{"resource": resource, "scope": scope}, *sorted(found, key=repr)]


async def test_light_spans_encode_to_the_same_otlp_as_the_sdks_spans() -> None:
    light = await _run(TracerProvider(resource=RESOURCE), light=True)
    watched = TracerProvider(resource=RESOURCE)
    watched.add_span_processor(Starts())
    sdk = await _run(watched, light=False)

    names = sorted(s.name for s in light)
    assert names == sorted(
        [
            "invoke_agent parity",
            "step 1",
            "chat primary",
            "chat backup",
            "execute_tool weather",
            "execute_tool broken",
            "step 2",
            "chat primary",
            "chat backup",
        ]
    )
    assert _otlp(light) == _otlp(sdk)
    events = [e.name for s in light for e in s.events]
    assert events == ["bastion.agent.model.fellback"] * 2
    assert [s.to_json() != "" for s in light] == [True] * len(light)  # as an SDK span


def _points(meter_provider: MeterProvider, reader: InMemoryMetricReader) -> list[Any]:
    data = reader.get_metrics_data()
    assert data is not None
    found: list[Any] = []
    for resource in data.resource_metrics:
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    assert isinstance(point, HistogramDataPoint)
                    found.append(
                        (
                            metric.name,
                            metric.unit,
                            sorted((point.attributes or {}).items()),
                            point.count,
                            point.sum,
                            point.min,
                            point.max,
                            tuple(point.bucket_counts),
                            tuple(point.explicit_bounds),
                        )
                    )
    return sorted(found)


def _meter() -> tuple[MeterProvider, InMemoryMetricReader, Meter]:
    reader = InMemoryMetricReader()
    provider = MeterProvider(metric_readers=[reader])
    return provider, reader, provider.get_meter("bastion")


def test_queued_metric_values_reach_the_reader_as_recorded_ones_do() -> None:
    queued_provider, queued_reader, queued_meter = _meter()
    direct_provider, direct_reader, direct_meter = _meter()
    queued = GenAIMetrics(queued_meter)
    direct = GenAIMetrics(direct_meter)
    calls = [("openai:gpt-4o", "openai:gpt-4o-2024", 12, 5, 0.3), ("test:small", "", 900, 1, 2.5)]
    for model, response_model, tokens_in, tokens_out, seconds in calls:
        usage = Usage(prompt_tokens=tokens_in, completion_tokens=tokens_out)
        queued.duration(model, seconds)
        queued.tokens(model, response_model, usage)
        direct.duration(model, seconds)
        direct.tokens(model, response_model, usage)
        direct.flush()  # fed at once: what recording on the spot gives

    points = _points(queued_provider, queued_reader)  # the collection feeds the queue first
    assert points == _points(direct_provider, direct_reader)
    assert [(p[0], p[3]) for p in points] == [
        ("gen_ai.client.operation.duration", 1),
        ("gen_ai.client.operation.duration", 1),
        ("gen_ai.client.token.usage", 1),
        ("gen_ai.client.token.usage", 1),
        ("gen_ai.client.token.usage", 1),
        ("gen_ai.client.token.usage", 1),
    ]
    assert "bastion.metrics.flush" not in {p[0] for p in points}  # the hook exports nothing


def test_a_meter_nobody_collects_from_is_fed_once_the_queue_fills() -> None:
    provider, reader, meter = _meter()
    metrics = GenAIMetrics(meter)
    usage = Usage(prompt_tokens=1, completion_tokens=1)
    for _ in range(FLUSH_AT // 2):
        metrics.tokens("test:m", "", usage)  # two values each: the queue is now full
    assert len(metrics._pending) == 0  # pyright: ignore[reportPrivateUsage]
    (first, second) = _points(provider, reader)
    assert (first[3], second[3]) == (FLUSH_AT // 2, FLUSH_AT // 2)


async def test_metric_exemplars_point_at_the_model_calls_span() -> None:
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    meter_provider, reader, _ = _meter()
    instrument(tracer_provider=tracer_provider, meter_provider=meter_provider)
    try:
        await Agent("a", model=ScriptedModel(["hi"])).run("go")
    finally:
        uninstrument()
    (chat,) = [s for s in exporter.get_finished_spans() if s.name == "chat scripted"]
    assert chat.context is not None
    data = reader.get_metrics_data()
    assert data is not None
    exemplars = [
        (metric.name, exemplar.trace_id, exemplar.span_id)
        for resource in data.resource_metrics
        for scope in resource.scope_metrics
        for metric in scope.metrics
        for point in metric.data.data_points
        for exemplar in point.exemplars
    ]
    ids = (chat.context.trace_id, chat.context.span_id)
    assert sorted(exemplars) == [
        ("gen_ai.client.operation.duration", *ids),
        ("gen_ai.client.token.usage", *ids),
        ("gen_ai.client.token.usage", *ids),
    ]
