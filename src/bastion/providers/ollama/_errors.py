"""Ollama's errors → Bastion's model-error taxonomy.

Ollama reports failures as ``{"error": "message"}``, with an HTTP status before the stream
starts or as a stream line after it. Called by ``_protocol`` and ``_stream``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from bastion.core import BadRequest, ContextLengthExceeded, ModelError, Overloaded
from bastion.providers._errors import error_from_status, json_error_fields

__all__ = ["http_error", "stream_error"]

_NOT_FOUND = re.compile(r"model ['\"]?([^'\"\s]+)['\"]? not found", re.IGNORECASE)
# Messages Ollama gives a request it cannot take (Go's JSON decoding, argument checks).
_REQUEST_FAULT = re.compile(
    r"cannot unmarshal|invalid (?:request|message|role|format|option|value)|"
    r"unknown field|missing required|validation",
    re.IGNORECASE,
)


def http_error(status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    """Map an HTTP error answer of Ollama; a missing model says how to pull it.

    A 5xx whose message is about the request itself (a field of the wrong type, an invalid
    value) is a :class:`BadRequest`: the same request would fail again, so it is not retried.
    """
    message, _ = json_error_fields(body)
    missing = _NOT_FOUND.search(message)
    if status == 404 or missing is not None:
        model = missing.group(1) if missing is not None else "<model>"
        return BadRequest(
            f"ollama answered HTTP {status}: {message}. "
            f"Pull the model first (`ollama pull {model}`), or check the model name.",
            status=status,
            body=body,
            headers=headers,
        )
    if status >= 500 and _REQUEST_FAULT.search(message):
        return BadRequest(
            f"ollama answered HTTP {status}: {message}. The request was refused as invalid; "
            "it is not retried.",
            status=status,
            body=body,
            headers=headers,
        )
    return error_from_status(status, body, headers, vendor="ollama")


def stream_error(error: object, body: str, *, status: int | None = None) -> ModelError:
    """Map an ``{"error": ...}`` line met after the stream began (the status was 200).

    A status carried on the line decides first (a 400 is never retried, a 429 is a rate
    limit); then the message: a missing model or a context overflow as for HTTP errors,
    an invalid request as :class:`BadRequest`, anything else a server-side failure
    (:class:`Overloaded`, retryable).
    """
    message = error if isinstance(error, str) else json.dumps(error)
    text = f"ollama reported an error during the stream: {message}"
    if (missing := _NOT_FOUND.search(message)) is not None:
        return BadRequest(
            f"{text}. Pull the model first (`ollama pull {missing.group(1)}`).", body=body
        )
    if status is not None:
        mapped = error_from_status(status, body, {}, vendor="ollama")
        return type(mapped)(
            text, body=body, vendor_code=str(status), retry_after=mapped.retry_after
        )
    if isinstance(error_from_status(400, body, {}, vendor="ollama"), ContextLengthExceeded):
        return ContextLengthExceeded(text, body=body)
    if _REQUEST_FAULT.search(message):
        return BadRequest(text, body=body)
    return Overloaded(text, body=body)
