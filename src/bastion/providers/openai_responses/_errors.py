"""OpenAI error codes → Bastion's model-error taxonomy, for HTTP and in-stream failures.

OpenAI reports the precise cause in ``error.code`` (``context_length_exceeded`` arrives as
a plain 400), so codes are checked before the status. Called by ``_protocol`` (HTTP errors)
and ``_parser`` (``response.failed`` and ``error`` events).
"""

from __future__ import annotations

from collections.abc import Mapping

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    ContextLengthExceeded,
    ModelError,
    Overloaded,
    RateLimited,
)
from bastion.providers._errors import error_from_status, json_error_fields, retry_after_seconds

__all__ = ["VENDOR", "error_for_code", "http_error", "stream_error"]

VENDOR = "openai"

_BY_CODE: dict[str, type[ModelError]] = {
    "context_length_exceeded": ContextLengthExceeded,
    "string_above_max_length": ContextLengthExceeded,
    "rate_limit_exceeded": RateLimited,
    "insufficient_quota": RateLimited,
    "invalid_api_key": AuthenticationFailed,
    "invalid_authentication": AuthenticationFailed,
    "server_error": Overloaded,
    "server_is_overloaded": Overloaded,
    "slow_down": Overloaded,
    "content_filter": ContentFiltered,
}


def error_for_code(
    code: str | None,
    message: str,
    *,
    status: int | None = None,
    body: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> ModelError | None:
    """The error a known OpenAI ``code`` means, or None when the code is not known."""
    cls = _BY_CODE.get(code or "")
    if cls is None:
        return None
    where = f"HTTP {status}" if status is not None else "in the stream"
    return cls(
        f"{VENDOR} failed {where} with {code!r}: {message}",
        status=status,
        body=body,
        vendor_code=code,
        headers=headers,
        retry_after=retry_after_seconds(headers) if headers else None,
        # a spent quota is a rate refusal a fallback may answer, but waiting will not help
        retryable=False if code == "insufficient_quota" else None,
    )


def stream_error(code: str | None, message: str, body: str) -> ModelError:
    """The error for a failure reported inside a 200 stream (no HTTP status to go by).

    Unknown codes are the server's failure (``Overloaded``, retryable) unless the code says
    the request was invalid.
    """
    known = error_for_code(code, message, body=body)
    if known is not None:
        return known
    cls = BadRequest if code and code.startswith("invalid") else Overloaded
    return cls(
        f"{VENDOR} failed in the stream with {code!r}: {message}", body=body, vendor_code=code
    )


def http_error(status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    """Map an HTTP error response: OpenAI's ``error.code`` first, then the status."""
    message, code = json_error_fields(body)
    known = error_for_code(code, message, status=status, body=body, headers=headers)
    return known or error_from_status(status, body, headers, vendor=VENDOR)
