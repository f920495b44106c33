"""The GenAI client metrics: token usage and operation duration histograms."""

from __future__ import annotations

from opentelemetry.metrics import Meter

from bastion.core import Usage

from ._names import chat_attributes, split_model

__all__ = ["GenAIMetrics"]

# Bucket boundaries the GenAI conventions advise for each histogram.
TOKEN_BUCKETS = (1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304)
DURATION_BUCKETS = (0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48)


class GenAIMetrics:
    """``gen_ai.client.token.usage`` and ``gen_ai.client.operation.duration``."""

    __slots__ = ("_attributes", "_duration", "_tokens")

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

    def duration(self, model: str, seconds: float) -> None:
        """Record how long one model call took."""
        self._duration.record(seconds, self._labels(model))

    def tokens(self, model: str, response_model: str, usage: Usage) -> None:
        """Record the input and output tokens of one model call."""
        self._tokens.record(usage.input_tokens, self._labels(model, response_model, "input"))
        self._tokens.record(usage.output_tokens, self._labels(model, response_model, "output"))
