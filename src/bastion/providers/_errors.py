"""HTTP failures → Bastion's model-error taxonomy (what retry and fallback decide on).

Adapters call :func:`error_from_status` and may first recognise vendor codes (a 400 that
is really "context length exceeded") with ``vendor_error``.
"""

from __future__ import annotations

import email.utils
import json
import time
from collections.abc import Mapping
from typing import TypedDict, cast

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    ContentFiltered,
    ContextLengthExceeded,
    JsonObject,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
    StreamInterrupted,
)

__all__ = [
    "ErrorFields",
    "as_object",
    "error_fields",
    "error_from_status",
    "json_error_fields",
    "retry_after_seconds",
    "transport_error",
]


class ErrorFields(TypedDict, total=False):
    """The keyword arguments of a :class:`~bastion.core.ModelError` an adapter fills in."""

    status: int | None
    body: str | None
    vendor_code: str | None
    retry_after: float | None
    headers: Mapping[str, str] | None
    retryable: bool | None


_CONTEXT_WORDS = (
    "context length",
    "context_length",
    "maximum context",
    "context window",
    "too many tokens",
    "prompt is too long",
    "input is too long",
    "exceeds the maximum",
)


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """Seconds to wait from ``retry-after-ms`` / ``retry-after`` (seconds or an HTTP date)."""
    lowered = {k.lower(): v for k, v in headers.items()}
    if (ms := lowered.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(ms) / 1000)
        except ValueError:
            pass
    value = lowered.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        parsed = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None  # neither seconds nor an HTTP date: ignore it rather than guess
    return max(0.0, parsed.timestamp() - time.time())


def json_error_fields(body: str) -> tuple[str, str | None]:
    """``(message, code)`` from the usual JSON error bodies (``{"error": {...}}`` shapes)."""
    try:
        data: object = json.loads(body)
    except ValueError:
        return body.strip()[:500], None
    outer = as_object(data)
    error: object = outer.get("error", outer) if outer is not None else data
    if isinstance(error, str):
        return error, None
    fields = as_object(error)
    if fields is None:
        return body.strip()[:500], None
    message = str(fields.get("message") or fields.get("detail") or body[:500])
    code = fields.get("code") or fields.get("type") or fields.get("status")
    return message, None if code is None else str(code)


_REQUEST_ERROR_TYPES = frozenset(
    {
        "invalid_request_error",
        "invalid_request",
        "badrequesterror",
        "bad_request",
        "validation_error",
        "invalid_argument",
        "unprocessableentityerror",
    }
)


def _status_in_body(body: str, code: str | None) -> int | None:
    """The 4xx status a body reports for itself, or None when it reports none.

    Read from a numeric ``code``/``status`` (vLLM's ``"code": 400``), a request-error
    ``type`` (``invalid_request_error``, ``BadRequestError``), or FastAPI's validation
    ``detail`` list.
    """
    try:
        data: object = json.loads(body)
    except ValueError:
        return None
    outer = as_object(data) or {}
    inner = as_object(outer.get("error")) or {}
    for fields in (inner, outer):
        for key in ("code", "status", "status_code"):
            value = fields.get(key)
            if isinstance(value, str) and value.isdigit():
                value = int(value)
            if isinstance(value, int) and 400 <= value < 500:
                return value
    kinds = {str(f.get("type", "")).lower() for f in (inner, outer)} | {(code or "").lower()}
    if kinds & _REQUEST_ERROR_TYPES:
        return 400
    if isinstance(outer.get("detail"), list):  # FastAPI / pydantic request validation
        return 422
    return None


def as_object(value: object) -> JsonObject | None:
    """``value`` (decoded JSON) as a JSON object, or None when it is not one."""
    return cast("JsonObject", value) if isinstance(value, dict) else None


def error_fields(
    status: int | None,
    body: str | None,
    headers: Mapping[str, str],
    *,
    vendor_code: str | None,
    retry_after: float | None = None,
) -> ErrorFields:
    """The fields of a mapped error; the wait is ``retry_after``, else the headers' one."""
    return {
        "status": status,
        "body": body,
        "vendor_code": vendor_code,
        "headers": headers,
        "retry_after": retry_after or retry_after_seconds(headers),
    }


def error_from_status(
    status: int, body: str, headers: Mapping[str, str], *, vendor: str
) -> ModelError:
    """Map an HTTP error response to the taxonomy, keeping status, body and vendor code."""
    message, code = json_error_fields(body)
    text = f"{vendor} answered HTTP {status}: {message}"
    kwargs = error_fields(status, body, headers, vendor_code=code)
    lowered = f"{message} {code or ''}".lower()
    if status >= 500 or status == 200:
        # A server error (or an error event inside a 200 stream) whose body says the request
        # was invalid or rate limited: the body knows better than the status.
        status = _status_in_body(body, code) or status
    if status == 429:
        return RateLimited(text, **kwargs)
    if status in (401, 403):
        return AuthenticationFailed(text, **kwargs)
    if status == 413 or (status in (400, 422) and any(w in lowered for w in _CONTEXT_WORDS)):
        return ContextLengthExceeded(text, **kwargs)
    if status in (400, 422) and ("content_filter" in lowered or "content policy" in lowered):
        return ContentFiltered(text, **kwargs)
    if status in (408, 504):
        return ModelTimeout(text, **kwargs)
    if status >= 500:
        return Overloaded(text, **kwargs)  # 500, 502, 503, 529 (Anthropic "overloaded")
    return BadRequest(text, **kwargs)


def transport_error(
    exc: BaseException,
    *,
    vendor: str,
    url: str,
    answered: bool,
    chunks: int,
    timeout: float | None,
) -> ModelError:
    """Map a failure of the connection itself (no HTTP status to go by) to the taxonomy.

    The message says how far the call got, because the remedies differ: a host that cannot
    be reached is a configuration problem, a stream cut after it started is the network or
    a proxy, and a timeout is fixed with ``ModelSettings(timeout=...)``.

    Args:
        exc: The transport's exception (kept as the cause by the caller).
        vendor: The vendor, for the message.
        url: The URL the request went to.
        answered: Whether the vendor had sent the status line and headers.
        chunks: How many stream chunks had been parsed when it failed.
        timeout: The seconds of the limit that ran out, or None when it was no timeout.
    """
    detail = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if timeout is not None:
        if not answered:
            return ModelTimeout(
                f"{vendor} at {url} did not answer within {timeout:g} s ({detail}). "
                "Raise ModelSettings(timeout=...) if the server is just slow."
            )
        return ModelTimeout(
            f"The stream from {vendor} stalled: no data for {timeout:g} s after "
            f"{_chunks(chunks)} ({detail}). Raise ModelSettings(timeout=...) for slow servers."
        )
    if answered:
        return StreamInterrupted(
            f"The stream from {vendor} broke mid-way, after {_chunks(chunks)}: the "
            f"connection ended before the answer was complete ({detail})."
        )
    return ConnectionFailed(f"Could not reach {vendor} at {url} ({detail}).")


def _chunks(count: int) -> str:
    return "1 chunk" if count == 1 else f"{count} chunks"
