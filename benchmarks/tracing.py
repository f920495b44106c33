"""OpenTelemetry tracing: what it costs a run, on and off (issue 20).

Run as ``python -m benchmarks.tracing`` (``… breakdown``: CPU time of each part; ``… tap``:
CPU time of the tracing tap alone, fed a recorded run's events). The
agent is the overhead benchmark's S1 agent (``loop_async``: 3 sequential async tool
calls, then the answer; 4 model steps on ``FunctionModel``). Timed, interleaved in 14
rounds, µs per run (the median round, and the best one):

* ``off``: never instrumented (runs read no tap and do no per-event work);
* ``on``: ``bastion.observability.instrument()`` with an SDK ``TracerProvider``, a
  ``BatchSpanProcessor`` and an exporter that drops the batches, and an SDK
  ``MeterProvider`` with a metric reader (the token and duration histograms);
* ``on, capture_content``: the same, recording messages, arguments and results (redacted);
* ``on, step_spans=False``: no span per step (model and tool calls hang from the run's);
* ``on, 10% of runs sampled``: ``ParentBased(TraceIdRatioBased(0.1))``: a run left out
  records no span, only the metrics.

Every run is checked: the answer is ``done: 2,3,4``; every traced run makes 1 + 4 + 4 + 3
spans (run, steps, model calls, tool calls), counted by the exporter at the end, and 3
metric values per model call (12 per run), counted in the collected histograms.

The metric values of a run are queued and fed to the SDK when a reader collects (once a
minute with the SDK's periodic reader), off the run's path: after each round the reader
collects, timed apart; the ``collect`` column is that cost per run, which the ``µs/run``
column does not include.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

from opentelemetry.sdk.metrics import Histogram, MeterProvider
from opentelemetry.sdk.metrics.export import (
    AggregationTemporality,
    HistogramDataPoint,
    InMemoryMetricReader,
)
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.sampling import ParentBased, Sampler, TraceIdRatioBased

from bastion import Agent, tool
from bastion.observability import instrument, uninstrument

from ._bastion import _model
from ._script import EXPECTED_OUTPUT, INSTRUCTIONS, PROMPT, SCENARIO, TOOLS

EXPECTED = EXPECTED_OUTPUT["loop_async"]
SPANS_PER_RUN = 12
VALUES_PER_RUN = 12  # token usage (input, output) and duration of 4 model calls
ROUNDS = 14
COLLECT = "metric collection, per traced run (reader's thread, not in the rows above)"


class CountingExporter(SpanExporter):
    """Drops every batch, counting the spans (what a network exporter costs is not ours)."""

    def __init__(self) -> None:
        self.spans = 0

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        self.spans += len(spans)
        return SpanExportResult.SUCCESS


def _agent() -> Agent[Any, str]:
    return Agent(
        "s1",
        model=_model(SCENARIO["loop_async"]),
        instructions=INSTRUCTIONS,
        tools=[
            tool(s.function, name=s.name, description=s.description, side_effect_class="pure")
            for s in TOOLS["loop_async"]
        ],
    )


def _provider(exporter: CountingExporter, sampler: Sampler | None = None) -> TracerProvider:
    provider = TracerProvider(sampler=sampler)
    # A queue that holds every span of a round: none is dropped, so the count checks out.
    provider.add_span_processor(BatchSpanProcessor(exporter, max_queue_size=100_000))
    return provider


def _variants(
    full: TracerProvider, sampled: TracerProvider, meter_provider: MeterProvider
) -> dict[str, Callable[[], object]]:
    def on(
        provider: TracerProvider, *, capture_content: bool = False, step_spans: bool = True
    ) -> Callable[[], object]:
        return lambda: instrument(
            tracer_provider=provider,
            meter_provider=meter_provider,
            capture_content=capture_content,
            step_spans=step_spans,
        )

    return {
        "off": uninstrument,
        "on": on(full),
        "on, capture_content": on(full, capture_content=True),
        "on, step_spans=False": on(full, step_spans=False),
        "on, 10% of runs sampled": on(sampled),
    }


async def _time(agent: Agent[Any, str], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        result = await agent.run(PROMPT)
        if result.output != EXPECTED:
            raise AssertionError(f"{result.output!r} != {EXPECTED!r}")
    return (time.perf_counter() - start) / n * 1e6


def _metric_values(reader: InMemoryMetricReader) -> int:
    """How many values the collected histograms hold (the reader collects first)."""
    data = reader.get_metrics_data()
    found = 0
    for resource in data.resource_metrics if data is not None else ():
        for scope in resource.scope_metrics:
            for metric in scope.metrics:
                for point in metric.data.data_points:
                    found += point.count if isinstance(point, HistogramDataPoint) else 0
    return found


async def measure(runs: int = 2_100) -> dict[str, tuple[float, float, float]]:
    """Median µs per run of each variant over 14 interleaved rounds (every span checked),
    its best round (the steadier figure on a loaded machine), and the median µs per run
    its metric collection took after the round."""
    exporter, sampled_exporter = CountingExporter(), CountingExporter()
    full = _provider(exporter)
    sampled = _provider(sampled_exporter, ParentBased(TraceIdRatioBased(0.1)))
    # Delta: each collection holds the values recorded since the one before.
    reader = InMemoryMetricReader({Histogram: AggregationTemporality.DELTA})
    variants = _variants(full, sampled, MeterProvider(metric_readers=[reader]))
    agent = _agent()
    spans = values = made = 0
    times: dict[str, list[float]] = {label: [] for label in variants}
    collects: dict[str, list[float]] = {label: [] for label in variants}
    for round in range(ROUNDS + 1):  # round 0 warms up (and checks)
        n = 100 if round == 0 else runs // ROUNDS
        for label, install in variants.items():
            install()
            elapsed = await _time(agent, n)
            start = time.perf_counter()
            values += _metric_values(reader)  # the reader's collection, off the runs' path
            if round:
                times[label].append(elapsed)
                collects[label].append((time.perf_counter() - start) / n * 1e6)
            spans += n * SPANS_PER_RUN if label in ("on", "on, capture_content") else 0
            spans += n * (SPANS_PER_RUN - 4) if label == "on, step_spans=False" else 0
            made += 0 if label == "off" else n * VALUES_PER_RUN
    uninstrument()
    full.shutdown()  # exports what is still queued
    sampled.shutdown()
    if exporter.spans != spans or sampled_exporter.spans % SPANS_PER_RUN:
        raise AssertionError(f"{exporter.spans} spans exported, {spans} made")
    if values != made:
        raise AssertionError(f"{values} metric values collected, {made} recorded")
    return {
        label: (statistics.median(t), min(t), statistics.median(collects[label]))
        for label, t in times.items()
    }


async def breakdown(runs: int = 1_500) -> dict[str, float]:
    """Median CPU µs per run (``time.process_time``: steadier on a loaded machine) of the
    parts of tracing: event handling alone (every run sampled out, no-op meter), plus the
    metrics (a meter with a reader), plus the spans; and the reader's collection of a
    traced run's metric values, after each round (off the runs' path)."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    exporter = CountingExporter()
    dropped, kept = _provider(exporter, ALWAYS_OFF), _provider(exporter)
    reader = InMemoryMetricReader({Histogram: AggregationTemporality.DELTA})
    meter_provider = MeterProvider(metric_readers=[reader])
    variants: dict[str, Callable[[], object]] = {
        "off": uninstrument,
        "events only (sampled out, no-op meter)": lambda: instrument(
            tracer_provider=dropped, meter_provider=NoOpMeterProvider()
        ),
        "events + metrics (sampled out)": lambda: instrument(
            tracer_provider=dropped, meter_provider=meter_provider
        ),
        "events + metrics + spans (on)": lambda: instrument(
            tracer_provider=kept, meter_provider=meter_provider
        ),
    }
    agent = _agent()
    n = runs // 5
    times: dict[str, list[float]] = {label: [] for label in variants}
    times[COLLECT] = []
    for round in range(6):
        for label, install in variants.items():
            install()
            start = time.process_time()
            for _ in range(n):
                await agent.run(PROMPT)
            elapsed = time.process_time() - start
            start = time.process_time()
            _metric_values(reader)
            collected = time.process_time() - start
            if round:
                times[label].append(elapsed / n * 1e6)
                if label == "events + metrics + spans (on)":
                    times[COLLECT].append(collected / n * 1e6)
    uninstrument()
    kept.shutdown()
    return {label: statistics.median(t) for label, t in times.items()}


class _Recorder:
    """A run tap that keeps every (context, event) pair of the runs it sees."""

    needs_deltas = False  # as tracing without content capture: a quiet run

    def __init__(self) -> None:
        self.seen: list[tuple[Any, Any]] = []

    def __call__(self, ctx: Any, event: Any) -> None:
        self.seen.append((ctx, event))


async def tap_alone(runs: int = 3_000) -> dict[str, float]:
    """Median CPU µs per S1 run of the tracing tap alone, fed a recorded run's events in a
    loop (15 interleaved rounds; metric values collected between rounds, not timed)."""
    from opentelemetry.metrics import NoOpMeterProvider
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    from bastion.core import set_run_tap

    recorder = _Recorder()
    set_run_tap(recorder)
    await _agent().run(PROMPT)
    set_run_tap(None)
    exporter = CountingExporter()
    dropped, kept = _provider(exporter, ALWAYS_OFF), _provider(exporter)
    reader = InMemoryMetricReader()
    meter_provider = MeterProvider(metric_readers=[reader])
    variants: dict[str, Callable[[], Any]] = {
        "events only (sampled out, no-op meter)": lambda: instrument(
            tracer_provider=dropped, meter_provider=NoOpMeterProvider()
        ),
        "+ metrics (SDK meter with a reader)": lambda: instrument(
            tracer_provider=dropped, meter_provider=meter_provider
        ),
        "+ spans (on)": lambda: instrument(tracer_provider=kept, meter_provider=meter_provider),
    }
    n = runs // 15
    times: dict[str, list[float]] = {label: [] for label in variants}
    for _ in range(15):
        for label, install in variants.items():
            tap = install()
            start = time.process_time()
            for _ in range(n):
                for ctx, event in recorder.seen:
                    tap(ctx, event)
            times[label].append((time.process_time() - start) / n * 1e6)
            reader.collect()
    uninstrument()
    kept.shutdown()
    return {label: statistics.median(t) for label, t in times.items()}


async def main() -> None:
    if sys.argv[1:] == ["tap"]:
        print("| tap alone | CPU µs per S1 run |")
        print("|---|---|")
        for label, value in (await tap_alone()).items():
            print(f"| {label} | {value:.0f} |")
        return
    if sys.argv[1:] == ["breakdown"]:
        parts = await breakdown()
        print("| tracing | CPU µs/run | overhead |")
        print("|---|---|---|")
        for label, value in parts.items():
            share = value if label == COLLECT else value - parts["off"]
            print(f"| {label} | {value:.0f} | {share / parts['off'] * 100:+.1f}% |")
        return
    figures = await measure()
    off, best_off, _ = figures["off"]
    print("| tracing | µs/run | overhead | best round µs/run | overhead | collect µs/run |")
    print("|---|---|---|---|---|---|")
    for label, (value, best, collect) in figures.items():
        print(
            f"| {label} | {value:.0f} | {(value / off - 1) * 100:+.1f}% | {best:.0f} "
            f"| {(best / best_off - 1) * 100:+.1f}% | {collect:.1f} |"
        )


if __name__ == "__main__":
    asyncio.run(main())
