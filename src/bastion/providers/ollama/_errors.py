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


def http_error(status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    """Map an HTTP error answer of Ollama; a missing model says how to pull it."""
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
    return error_from_status(status, body, headers, vendor="ollama")


def stream_error(error: object, body: str) -> ModelError:
    """Map an ``{"error": ...}`` line met after the stream began (the status was 200).

    The message decides: a missing model or a context overflow as for HTTP errors, anything
    else is a server-side failure (:class:`Overloaded`, retryable).
    """
    message = error if isinstance(error, str) else json.dumps(error)
    text = f"ollama reported an error during the stream: {message}"
    if (missing := _NOT_FOUND.search(message)) is not None:
        return BadRequest(
            f"{text}. Pull the model first (`ollama pull {missing.group(1)}`).", body=body
        )
    if isinstance(error_from_status(400, body, {}, vendor="ollama"), ContextLengthExceeded):
        return ContextLengthExceeded(text, body=body)
    return Overloaded(text, body=body)
