"""Anthropic error bodies → Bastion's model-error taxonomy.

Anthropic reports failures as ``{"type": "error", "error": {"type": ..., "message": ...}}``,
both as HTTP error bodies and as an in-stream ``event: error``. The error type decides
before the status: a 500 whose body says ``invalid_request_error`` is a bad request (never
retried), an in-stream ``overloaded_error`` is an overload (retried). Called by
``_protocol`` (HTTP errors) and ``_parser`` (stream errors).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContextLengthExceeded,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
)
from bastion.providers._errors import as_object, error_from_status
from bastion.providers._errors import error_fields as http_error_fields

__all__ = ["error_fields", "error_from_body", "error_from_fields"]

_TOO_LONG = ("prompt is too long", "too many tokens", "context window", "context length")
_BY_TYPE: dict[str, type[ModelError]] = {
    "rate_limit_error": RateLimited,
    "overloaded_error": Overloaded,
    "api_error": Overloaded,
    "authentication_error": AuthenticationFailed,
    "permission_error": AuthenticationFailed,
    "request_too_large": ContextLengthExceeded,
    "not_found_error": BadRequest,
    "timeout_error": ModelTimeout,
    "billing_error": RateLimited,  # made not retryable below: waiting will not pay the bill
}


def error_fields(data: object) -> tuple[str | None, str]:
    """``(error type, message)`` of a decoded Anthropic error body (``None`` type if absent)."""
    outer = as_object(data)
    inner = as_object(outer.get("error")) if outer is not None else None
    if inner is None:
        return None, ""
    kind = inner.get("type")
    message = inner.get("message")
    return (
        kind if isinstance(kind, str) else None,
        message if isinstance(message, str) else "",
    )


def error_from_fields(
    kind: str | None,
    message: str,
    *,
    status: int | None,
    body: str | None,
    headers: Mapping[str, str],
) -> ModelError | None:
    """The error for an Anthropic error ``type``, or None when the type is not one we know."""
    kwargs = http_error_fields(status, body, headers, vendor_code=kind)
    where = f"HTTP {status}" if status is not None else "a stream error"
    text = f"anthropic answered {where} ({kind}): {message}"
    if kind == "invalid_request_error":
        if any(word in message.lower() for word in _TOO_LONG):
            return ContextLengthExceeded(text, **kwargs)
        return BadRequest(text, **kwargs)
    cls = _BY_TYPE.get(kind or "")
    if cls is None:
        return None
    if kind == "billing_error":
        kwargs["retryable"] = False
    return cls(text, **kwargs)


def error_from_body(status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    """Map an HTTP error response: the Anthropic error type first, then the status."""
    try:
        data: object = json.loads(body)
    except ValueError:
        data = None
    kind, message = error_fields(data)
    mapped = error_from_fields(kind, message, status=status, body=body, headers=headers)
    if mapped is not None:
        return mapped
    return error_from_status(status, body, headers, vendor="anthropic")
