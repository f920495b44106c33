"""OpenAI-compatible error bodies → Bastion's model-error taxonomy.

Used by the protocol for HTTP error responses and by the parser for an error object inside
a 200 stream. Classification looks at what the server said before the status: OpenAI's
string codes, a numeric ``code`` (OpenRouter and vLLM carry the HTTP status there), and a
request-validation body behind a 5xx (some compatible servers answer a malformed request
with HTTP 500). A bad request is never retried; a rate limit keeps its retry-after.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from bastion.core import (
    BadRequest,
    ContentFiltered,
    ContextLengthExceeded,
    JsonObject,
    JsonValue,
    ModelError,
    RateLimited,
)
from bastion.providers._errors import as_object, error_from_status

__all__ = ["http_error", "stream_error"]

# insufficient_quota is a quota refusal: RateLimited keeps it fallback-eligible (what a user
# with a second provider wants) and it is marked not retryable.
_BY_CODE: dict[str, type[ModelError]] = {
    "context_length_exceeded": ContextLengthExceeded,
    "string_above_max_length": ContextLengthExceeded,
    "rate_limit_exceeded": RateLimited,
    "insufficient_quota": RateLimited,
    "content_filter": ContentFiltered,
    "content_policy_violation": ContentFiltered,
}
# Error types and codes that say "your request is wrong", whatever status came with them.
_REQUEST_CODES = frozenset(
    {
        "invalid_request_error",
        "invalid_request",
        "badrequesterror",
        "bad_request",
        "validation_error",
        "invalid_value",
        "invalid_type",
        "missing_required_parameter",
        "unsupported_parameter",
        "unsupported_value",
    }
)
# Messages that blame the request (pydantic/FastAPI validation as in vLLM and LiteLLM;
# llama-server's "Assistant message must contain either 'content' or 'tool_calls'!" sent
# with HTTP 500; Go JSON decoding errors). Narrow on purpose: "invalid response from the
# upstream" is an outage, not a request fault.
_REQUEST_FAULT = re.compile(
    r"validation error|field required|extra inputs are not permitted|extra_forbidden|"
    r"must (?:contain|be|have|include)\b|(?:is|are) required\b|missing required|"
    r"invalid (?:request|parameter|argument|value|message|role|type|json|schema|format|tool)|"
    r"unsupported (?:parameter|value|content)|unknown (?:field|parameter|argument)|"
    r"cannot unmarshal|failed to parse (?:the )?(?:request|messages|tools)",
    re.IGNORECASE,
)
_TRY_AGAIN = re.compile(r"try again in (?:(\d+)m)?(\d+(?:\.\d+)?)(ms|s)\b", re.IGNORECASE)


def _error_object(body: str) -> JsonObject:
    """The error fields of a body: ``{"error": {...}}``, ``{"error": "text"}`` or top level."""
    try:
        data: object = json.loads(body)
    except ValueError:
        return {"message": body.strip()[:500]}
    outer = as_object(data)
    if outer is None:
        return {"message": str(data)[:500]}
    inner = outer.get("error")
    if isinstance(inner, str):
        return {"message": inner}
    return as_object(inner) or outer


def _codes(error: Mapping[str, object]) -> list[str]:
    return [v.lower() for k in ("code", "type") if isinstance(v := error.get(k), str)]


def _numeric_status(error: Mapping[str, object]) -> int | None:
    """The HTTP status an error object carries in ``code``/``status`` (``429``, ``"400"``)."""
    for key in ("code", "status"):
        value = error.get(key)
        if isinstance(value, bool):
            continue
        if isinstance(value, int) and 400 <= value <= 599:
            return value
        if isinstance(value, str) and value.isdigit() and 400 <= int(value) <= 599:
            return int(value)
    return None


def _is_request_error(error: Mapping[str, object], body: str) -> bool:
    if any(code in _REQUEST_CODES for code in _codes(error)):
        return True
    detail = error.get("detail")
    if isinstance(detail, list) and detail:
        return True  # FastAPI's 422 shape, whatever status carried it
    message = error.get("message")
    text = message if isinstance(message, str) else body[:2000]
    return _REQUEST_FAULT.search(text) is not None


def _hinted_retry_after(error: Mapping[str, object]) -> float | None:
    """Seconds to wait when the body says so (no headers reach an in-stream error)."""
    metadata = as_object(error.get("metadata")) or {}
    for source in (error, metadata):
        for key in ("retry_after", "retry_after_seconds"):
            value = source.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                return max(0.0, float(value))
    message = error.get("message")
    if isinstance(message, str) and (match := _TRY_AGAIN.search(message)):
        minutes = float(match.group(1) or 0)
        amount = float(match.group(2))
        seconds = amount / 1000 if match.group(3).lower() == "ms" else amount
        return minutes * 60 + seconds
    return None


def _classify(
    status: int, body: str, headers: Mapping[str, str], *, vendor: str, error: JsonObject
) -> ModelError:
    """Status and body together: codes first, then a validation body behind a 5xx."""
    base = error_from_status(status, body, headers, vendor=vendor)
    codes = _codes(error)
    result = base
    for code in codes:
        cls = _BY_CODE.get(code)
        if cls is not None and type(base) is not cls:
            result = _retyped(cls, base, status, body, headers)
        if cls is not None:
            break
    else:
        if status >= 500 and _is_request_error(error, body):
            # Not an outage: the same request would fail again. Never retried.
            result = _retyped(BadRequest, base, status, body, headers)
    if isinstance(result, RateLimited) and result.retry_after is None:
        result.retry_after = _hinted_retry_after(error)
    if "insufficient_quota" in codes:
        result.retryable = False  # the quota is spent: waiting will not help, a fallback may
    if isinstance(result, BadRequest):
        result.retryable = False
    return result


def _retyped(
    cls: type[ModelError], base: ModelError, status: int, body: str, headers: Mapping[str, str]
) -> ModelError:
    return cls(
        base.message,
        status=status,
        body=body,
        vendor_code=base.vendor_code,
        retry_after=base.retry_after,
        headers=headers,
    )


def http_error(status: int, body: str, headers: Mapping[str, str], *, vendor: str) -> ModelError:
    """Map an HTTP error response, reading the body's codes before the status."""
    error = _error_object(body)
    numeric = _numeric_status(error)
    if status >= 500 and numeric is not None and numeric < 500:
        status_for_class = numeric  # a proxy wrapped the upstream's 4xx in a 5xx
    else:
        status_for_class = status
    result = _classify(status_for_class, body, headers, vendor=vendor, error=error)
    result.status = status
    return result


def stream_error(error: Mapping[str, JsonValue], raw: str, *, vendor: str) -> ModelError:
    """Map an error object the vendor sent inside a 200 stream.

    A numeric ``code`` is the HTTP status the failure would have had (OpenRouter, vLLM):
    it decides the class, so a 400 is a :class:`~bastion.core.BadRequest` (never retried)
    and a 429 a :class:`~bastion.core.RateLimited`. Without one, OpenAI's string codes
    decide; anything else is a failure on the vendor's side after it accepted the request
    (:class:`~bastion.core.Overloaded`, retryable), except a request-validation error.
    """
    fields = dict(error)
    message = fields.get("message")
    text = f"{vendor} reported an error in the stream: {message if message else raw[:500]}"
    numeric = _numeric_status(fields)
    status = numeric if numeric is not None else 500
    classified = _classify(status, raw, {}, vendor=vendor, error=fields)
    codes = _codes(fields)
    return type(classified)(
        text,
        body=raw,
        vendor_code=codes[0] if codes else (str(numeric) if numeric is not None else None),
        retry_after=classified.retry_after,
        retryable=classified.retryable,
    )
