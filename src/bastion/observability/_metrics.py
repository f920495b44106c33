"""The GenAI client metrics: token usage and operation duration histograms.

A run does not call the meter: each value goes onto a queue (one ``append``), and the
queue is fed to the histograms when a metric reader collects (a callback the SDK runs at
the start of every collection), or on the run's side once it holds
:data:`FLUSH_AT` values (a meter nobody collects from). The same values reach the same
histograms with the same attributes; what moves is when the SDK's per-record work
(attribute checks, aggregation) is done: off the run's hot path, in the reader's thread.
"""

from __future__ import annotations

import weakref
from collections import deque
from collections.abc import Iterable

from opentelemetry import trace
from opentelemetry.metrics import CallbackOptions, Histogram, Meter, Observation
from opentelemetry.trace import Span

from bastion.core import Usage

from ._names import chat_attributes, split_model

__all__ = ["FLUSH_AT", "GenAIMetrics", "flush_all", "metrics_for"]

# Bucket boundaries the GenAI conventions advise for each histogram.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)
# Values held before a run feeds them to the meter itself (no reader collected them).
FLUSH_AT = 4096

# A value, its histogram and attributes, and the model call's span (for exemplars).
_Record = tuple[Histogram, float, dict[str, str], Span | None]
# Every live instance, and the one of each meter: any collection flushes them all (a
# meter registers a callback once per name, so a second instance's would be ignored).
_LIVE: weakref.WeakSet[GenAIMetrics] = weakref.WeakSet()
_BY_METER: weakref.WeakKeyDictionary[Meter, GenAIMetrics] = weakref.WeakKeyDictionary()


def metrics_for(meter: Meter) -> GenAIMetrics:
    """The meter's GenAI metrics, made once per meter."""
    try:
        found = _BY_METER.get(meter)
    except TypeError:  # a meter that cannot be weakly referenced: not cached
        return GenAIMetrics(meter)
    if found is None:
        found = _BY_METER[meter] = GenAIMetrics(meter)
    return found


def flush_all() -> None:
    """Feed every instance's queued values to the meters."""
    for found in list(_LIVE):
        found.flush()


def _on_collect(options: CallbackOptions) -> Iterable[Observation]:
    flush_all()
    return ()


class GenAIMetrics:
    """``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``."""

    __slots__ = ("__weakref__", "_attributes", "_duration", "_pending", "_tokens")

    def __init__(self, meter: Meter) -> None:
        self._tokens = meter.create_histogram(
            "gen_ai.client.token.usage",
            unit="{token}",
            description="Number of input and output tokens used.",
            explicit_bucket_boundaries_advisory=TOKEN_BUCKETS,
        )
        self._duration = meter.create_histogram(
            "gen_ai.client.operation.duration",
            unit="s",
            description="GenAI operation duration.",
            explicit_bucket_boundaries_advisory=DURATION_BUCKETS,
        )
        # Attribute sets by (model, response model, token type), built once each.
        self._attributes: dict[tuple[str, str, str], dict[str, str]] = {}
        # Appended on the run's side, drained by whichever thread flushes (thread-safe).
        self._pending: deque[_Record] = deque()
        # Never observes a value (so it exports nothing): the SDK calls it first thing
        # in each collection, which is when the queued values go to the histograms.
        meter.create_observable_gauge(
            "bastion.metrics.flush",
            callbacks=[_on_collect],
            description="Feeds Bastion's queued GenAI metric values before a collection.",
        )
        _LIVE.add(self)

    def _labels(self, model: str, response_model: str = "", token_type: str = "") -> dict[str, str]:
        key = (model, response_model, token_type)
        found = self._attributes.get(key)
        if found is None:
            found = self._attributes[key] = chat_attributes(model)
            if response_model:
                found["gen_ai.response.model"] = split_model(response_model)[1]
            if token_type:
                found["gen_ai.token.type"] = token_type
        return found

    def duration(self, model: str, seconds: float, span: Span | None = None) -> None:
        """Record how long one model call (whose span is ``span``) took."""
        self._pending.append((self._duration, seconds, self._labels(model), span))
        if len(self._pending) >= FLUSH_AT:
            self.flush()

    def tokens(
        self, model: str, response_model: str, usage: Usage, span: Span | None = None
    ) -> None:
        """Record the input and output tokens of one model call (whose span is ``span``)."""
        pending = self._pending
        labels = self._labels
        pending.append(
            (self._tokens, usage.input_tokens, labels(model, response_model, "input"), span)
        )
        pending.append(
            (self._tokens, usage.output_tokens, labels(model, response_model, "output"), span)
        )
        if len(pending) >= FLUSH_AT:
            self.flush()

    def flush(self) -> None:
        """Feed every queued value to its histogram, oldest first."""
        pending = self._pending
        while pending:
            try:
                histogram, value, attributes, span = pending.popleft()
            except IndexError:  # another thread took the last one
                return
            # The model call's span as the context: a sampled one becomes the exemplar.
            context = None if span is None else trace.set_span_in_context(span)
            histogram.record(value, attributes, context)
