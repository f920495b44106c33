"""Request-building pieces the wire protocols share: headers, sampling settings, arguments.

Called by the protocols' payload builders (``anthropic/``, ``gemini/``, ``ollama/``,
``openai_responses/``).
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from bastion.core import JsonObject, ModelSettings

from ._errors import as_object

__all__ = ["SamplingKeys", "object_arguments", "sampling_fields", "sse_bearer_headers"]


@dataclass(frozen=True, slots=True)
class SamplingKeys:
    """A vendor's field names for the sampling settings; ``None``: the vendor has none."""

    temperature: str = "temperature"
    top_p: str = "top_p"
    max_tokens: str | None = None
    stop: str | None = None
    seed: str | None = None


def sampling_fields(settings: ModelSettings, keys: SamplingKeys) -> JsonObject:
    """The sampling settings that are set, under the vendor's names.

    In this order: temperature, top_p, max_tokens, stop (only a non-empty one), seed.
    """
    fields: JsonObject = {}
    if settings.temperature is not None:
        fields[keys.temperature] = settings.temperature
    if settings.top_p is not None:
        fields[keys.top_p] = settings.top_p
    if keys.max_tokens is not None and settings.max_tokens is not None:
        fields[keys.max_tokens] = settings.max_tokens
    if keys.stop is not None and settings.stop:
        fields[keys.stop] = list(settings.stop)
    if keys.seed is not None and settings.seed is not None:
        fields[keys.seed] = settings.seed
    return fields


def object_arguments(arguments: str) -> JsonObject:
    """A tool call's arguments as the JSON object a vendor requires in the history.

    A model's malformed arguments were already answered with a tool error (the executor
    told the model), so such a call is sent back with an empty object: the history stays
    valid without inventing values.
    """
    try:
        value: object = json.loads(arguments) if arguments.strip() else {}
    except ValueError:
        return {}
    return as_object(value) or {}


def sse_bearer_headers(api_key: str | None) -> dict[str, str]:
    """An SSE answer accepted, and Bearer authentication when a key is set."""
    headers = {"Accept": "text/event-stream"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key}"
    return headers
