"""Google API error bodies → Bastion's model-error taxonomy.

Called by ``GeminiProtocol.error`` for HTTP errors and by the stream parser for an
``error`` object inside the stream. Google errors look like
``{"error": {"code": 429, "message": "...", "status": "RESOURCE_EXHAUSTED", "details": [...]}}``
(sometimes wrapped in a one-element list); the ``status`` decides, then the HTTP status.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContextLengthExceeded,
    JsonObject,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
)
from bastion.providers._errors import as_object, error_fields, error_from_status

__all__ = ["error_from_body"]

_BY_STATUS: dict[str, type[ModelError]] = {
    "RESOURCE_EXHAUSTED": RateLimited,
    "UNAVAILABLE": Overloaded,
    "UNAUTHENTICATED": AuthenticationFailed,
    "PERMISSION_DENIED": AuthenticationFailed,
    "DEADLINE_EXCEEDED": ModelTimeout,
}
_TOKEN_LIMIT_WORDS = (
    "input token count",
    "number of tokens",
    "token limit",
    "too many tokens",
    "context window",
    "context length",
)
_RETRY_INFO = "type.googleapis.com/google.rpc.RetryInfo"


def error_from_body(status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    """Map a Google error response (HTTP ``status``, ``body``, ``headers``) to a model error."""
    error = _error_object(body)
    if error is None:
        return error_from_status(status, body, headers, vendor="gemini")
    message = str(error.get("message") or body[:500])
    code = error.get("status")
    http = error.get("code")
    effective = status if status >= 400 or not isinstance(http, int) else http
    vendor_code = code if isinstance(code, str) else None
    kwargs = error_fields(
        effective, body, headers, vendor_code=vendor_code, retry_after=_retry_delay(error)
    )
    text = f"gemini answered HTTP {effective} {code or ''}: {message}"
    if code == "INVALID_ARGUMENT":
        lowered = message.lower()
        if any(word in lowered for word in _TOKEN_LIMIT_WORDS):
            return ContextLengthExceeded(text, **kwargs)
        return BadRequest(text, **kwargs)
    kind = _BY_STATUS.get(code) if isinstance(code, str) else None
    if kind is not None:
        return kind(text, **kwargs)
    mapped = error_from_status(effective, body, headers, vendor="gemini")
    return type(mapped)(text, **kwargs)


def _error_object(body: str) -> JsonObject | None:
    try:
        data: object = json.loads(body)
    except ValueError:
        return None
    if isinstance(data, list):
        items = cast("list[object]", data)
        data = items[0] if items else None
    outer = as_object(data)
    return as_object(outer.get("error")) if outer is not None else None


def _retry_delay(error: JsonObject) -> float | None:
    details = error.get("details")
    items = cast("list[object]", details) if isinstance(details, list) else []
    for detail in items:
        fields = as_object(detail)
        if fields is None or fields.get("@type") != _RETRY_INFO:
            continue
        delay = fields.get("retryDelay")
        if isinstance(delay, str) and delay.endswith("s"):
            try:
                return max(0.0, float(delay[:-1]))
            except ValueError:
                return None
    return None
