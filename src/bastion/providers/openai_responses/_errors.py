"""OpenAI error codes → Bastion's model-error taxonomy, for HTTP and in-stream failures.

OpenAI reports the precise cause in ``error.code`` (``context_length_exceeded`` arrives as
a plain 400) and its family in ``error.type`` (``invalid_request_error``), so both are
checked before the status: a 500 whose body says the request was invalid is a bad request,
never retried as an overload. Inside a 200 stream (``error`` and ``response.failed``
events) there is no status at all; the code decides, a numeric code is read as the status
it names, and a rate limit keeps the wait the message asks for ("try again in 1.5s").
Called by ``_protocol`` (HTTP errors) and ``_parser`` (stream and whole-body failures).
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    ContextLengthExceeded,
    JsonValue,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
)
from bastion.providers._errors import as_object, error_from_status, retry_after_seconds

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
    "vector_store_timeout": ModelTimeout,
    "content_filter": ContentFiltered,
    "image_content_policy_violation": ContentFiltered,
    # the rest of ``response.failed``'s documented codes: the input was at fault
    "invalid_prompt": BadRequest,
    "empty_image_file": BadRequest,
    "failed_to_download_image": BadRequest,
    "unsupported_image_media_type": BadRequest,
}
# ``error.type`` families that say the request itself was refused, whatever the status.
_BY_TYPE: dict[str, type[ModelError]] = {
    "invalid_request_error": BadRequest,
    "authentication_error": AuthenticationFailed,
    "permission_error": AuthenticationFailed,
}
_TRY_AGAIN = re.compile(r"try again in (\d+(?:\.\d+)?)\s*(ms|s)\b", re.IGNORECASE)


def _class_for(code: str | None, kind: str | None) -> type[ModelError] | None:
    if code:
        if (cls := _BY_CODE.get(code)) is not None:
            return cls
        if code.startswith(("invalid_", "image_")):
            return BadRequest  # invalid_image_url, image_too_large, …: fixing the input helps
    return _BY_TYPE.get(kind or "")


def _wait_in(message: str) -> float | None:
    match = _TRY_AGAIN.search(message)
    if match is None:
        return None
    value = float(match.group(1))
    return value / 1000 if match.group(2).lower() == "ms" else value


def error_for_code(
    code: str | None,
    message: str,
    *,
    kind: str | None = None,
    status: int | None = None,
    body: str | None = None,
    headers: Mapping[str, str] | None = None,
) -> ModelError | None:
    """The error a known OpenAI ``code`` (or error ``type``) means, None when neither is known."""
    cls = _class_for(code, kind)
    if cls is None:
        return None
    if cls is ContextLengthExceeded or cls is BadRequest:
        lowered = message.lower()
        if "context window" in lowered or "context length" in lowered:
            cls = ContextLengthExceeded
    where = f"HTTP {status}" if status is not None else "in the stream"
    retry_after = retry_after_seconds(headers) if headers else None
    if cls is RateLimited and retry_after is None:
        retry_after = _wait_in(message)
    return cls(
        f"{VENDOR} failed {where} with {code or kind!r}: {message}",
        status=status,
        body=body,
        vendor_code=code or kind,
        headers=headers,
        retry_after=retry_after,
        # a spent quota is a rate refusal a fallback may answer, but waiting will not help
        retryable=False if code == "insufficient_quota" else None,
    )


def stream_error(error: Mapping[str, JsonValue], body: str) -> ModelError:
    """The error for a failure reported inside a 200 answer (no HTTP status to go by).

    ``error`` is the event's (or failed response's) error object: ``code``, ``message``
    and, on some servers, ``type``. A numeric code is read as the HTTP status it names;
    an unknown code is the server's failure (``Overloaded``, retryable).
    """
    message = str(error.get("message") or "no message")
    raw_code = error.get("code")
    kind = raw_kind if isinstance(raw_kind := error.get("type"), str) else None
    if isinstance(raw_code, int) or (isinstance(raw_code, str) and raw_code.isdigit()):
        status = int(raw_code)
        if status >= 400:
            mapped = error_from_status(status, body, {}, vendor=VENDOR)
            if isinstance(mapped, RateLimited) and mapped.retry_after is None:
                mapped.retry_after = _wait_in(message)
            mapped.message = f"{VENDOR} failed in the stream with code {status}: {message}"
            mapped.args = (mapped.message,)
            return mapped
    code = None if raw_code is None else str(raw_code)
    known = error_for_code(code, message, kind=kind, body=body)
    if known is not None:
        return known
    return Overloaded(
        f"{VENDOR} failed in the stream with {code!r}: {message}", body=body, vendor_code=code
    )


def http_error(status: int, body: str, headers: Mapping[str, str]) -> ModelError:
    """Map an HTTP error response: OpenAI's ``error.code`` and ``type`` first, then the status."""
    try:
        data: object = json.loads(body)
    except ValueError:
        data = None
    outer = as_object(data)
    error = as_object(outer.get("error")) if outer is not None else None
    if error is not None:
        code, kind, message = error.get("code"), error.get("type"), error.get("message")
        known = error_for_code(
            None if code is None else str(code),
            message if isinstance(message, str) else body[:500],
            # A family like invalid_request_error overrides only a 5xx: on a 4xx the status
            # is as precise (401 stays an authentication failure).
            kind=kind if isinstance(kind, str) and status >= 500 else None,
            status=status,
            body=body,
            headers=headers,
        )
        if known is not None:
            return known
    return error_from_status(status, body, headers, vendor=VENDOR)
