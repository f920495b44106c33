"""OpenAI error codes → Bastion's model-error taxonomy.

Used by the protocol for HTTP error responses and by the parser for an ``{"error": …}``
object inside the stream. OpenAI codes are recognised first, then the HTTP status decides
(:func:`bastion.providers._errors.error_from_status`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bastion.core import (
    BadRequest,
    ContentFiltered,
    ContextLengthExceeded,
    ModelError,
    Overloaded,
    RateLimited,
)
from bastion.providers._errors import as_object, error_from_status

__all__ = ["http_error", "stream_error"]

# insufficient_quota is a quota refusal: RateLimited keeps it fallback-eligible (what a user
# with a second provider wants) and http_error marks it not retryable.
_BY_CODE: dict[str, type[ModelError]] = {
    "context_length_exceeded": ContextLengthExceeded,
    "string_above_max_length": ContextLengthExceeded,
    "rate_limit_exceeded": RateLimited,
    "insufficient_quota": RateLimited,
    "content_filter": ContentFiltered,
    "content_policy_violation": ContentFiltered,
}


def _codes(error: Mapping[str, object]) -> list[str]:
    return [v for k in ("code", "type") if isinstance(v := error.get(k), str)]


def _error_object(body: str) -> dict[str, object] | None:
    try:
        data: object = json.loads(body)
    except ValueError:
        return None
    outer = as_object(data)
    return as_object(outer.get("error")) if outer is not None else None


def http_error(status: int, body: str, headers: Mapping[str, str], *, vendor: str) -> ModelError:
    """Map an HTTP error response, recognising OpenAI's error codes before the status."""
    base = error_from_status(status, body, headers, vendor=vendor)
    error = _error_object(body)
    codes = _codes(error) if error is not None else []
    result = base
    for code in codes:
        cls = _BY_CODE.get(code)
        if cls is None:
            continue
        if type(base) is not cls:
            result = cls(
                base.message,
                status=status,
                body=body,
                vendor_code=base.vendor_code,
                retry_after=base.retry_after,
                headers=headers,
            )
        break
    if "insufficient_quota" in codes:
        result.retryable = False  # the quota is spent: waiting will not help, a fallback may
    return result


def stream_error(error: Mapping[str, object], raw: str, *, vendor: str) -> ModelError:
    """Map an ``{"error": {...}}`` object the vendor sent inside a 200 stream.

    Unknown codes become :class:`~bastion.core.Overloaded` (a failure on the vendor's side
    after it accepted the request), except ``invalid_request_error`` (BadRequest).
    """
    codes = _codes(error)
    message = error.get("message")
    text = f"{vendor} reported an error in the stream: {message if message else raw[:500]}"
    vendor_code = codes[0] if codes else None
    cls: type[ModelError] = Overloaded
    for code in codes:
        if code in _BY_CODE:
            cls = _BY_CODE[code]
            break
    else:
        if "invalid_request_error" in codes:
            cls = BadRequest
    return cls(text, body=raw, vendor_code=vendor_code)
