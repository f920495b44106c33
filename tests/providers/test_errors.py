"""HTTP failures map to the error taxonomy that retry and fallback decide on (issue 3)."""

from __future__ import annotations

import email.utils
import time

import pytest

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    ContextLengthExceeded,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
)
from bastion.providers import error_from_status, retry_after_seconds


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        (429, '{"error": {"message": "slow down", "code": "rate_limit_exceeded"}}', RateLimited),
        (401, '{"error": {"message": "bad key"}}', AuthenticationFailed),
        (403, "forbidden", AuthenticationFailed),
        (413, '{"error": {"message": "request too large"}}', ContextLengthExceeded),
        (
            400,
            '{"error": {"message": "maximum context length is 8192 tokens"}}',
            ContextLengthExceeded,
        ),
        (400, '{"error": {"message": "bad field", "code": "invalid_value"}}', BadRequest),
        (400, '{"error": {"message": "flagged", "code": "content_filter"}}', ContentFiltered),
        (404, "no such model", BadRequest),
        (408, "", ModelTimeout),
        (500, "internal", Overloaded),
        (503, "unavailable", Overloaded),
        (529, '{"type": "error", "error": {"type": "overloaded_error"}}', Overloaded),
    ],
)
def test_status_codes_map_to_the_taxonomy(
    status: int, body: str, expected: type[ModelError]
) -> None:
    error = error_from_status(status, body, {}, vendor="test")
    assert type(error) is expected
    assert error.status == status
    assert error.body == body


def test_vendor_code_and_retry_after_are_kept() -> None:
    error = error_from_status(
        429,
        '{"error": {"message": "slow", "type": "rate_limit_error"}}',
        {"Retry-After": "7"},
        vendor="test",
    )
    assert (error.vendor_code, error.retry_after) == ("rate_limit_error", 7.0)


def test_retry_after_forms() -> None:
    assert retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert retry_after_seconds({"Retry-After": "3"}) == 3.0
    later = email.utils.formatdate(time.time() + 60, usegmt=True)
    seconds = retry_after_seconds({"retry-after": later})
    assert seconds is not None
    assert 55 <= seconds <= 61
    assert retry_after_seconds({}) is None
    assert retry_after_seconds({"retry-after": "soon"}) is None


def test_an_instance_may_say_retrying_will_not_help() -> None:
    # covers issue 3 (insufficient_quota: a RateLimited that is not retried but may fall back)
    error = RateLimited("quota spent", status=429, retryable=False)
    assert (error.retryable, error.fallback_eligible) == (False, True)
    assert RateLimited("slow down").retryable


async def test_openai_insufficient_quota_is_not_retried() -> None:
    from bastion.providers.openai._errors import http_error
    from bastion.providers.openai_responses._errors import http_error as responses_error

    body = '{"error": {"message": "You exceeded your quota", "code": "insufficient_quota"}}'
    for error in (http_error(429, body, {}, vendor="openai"), responses_error(429, body, {})):
        assert isinstance(error, RateLimited)
        assert error.retryable is False


@pytest.mark.parametrize(
    ("status", "body", "expected"),
    [
        # vLLM: an error object carrying the real status as "code"
        (
            500,
            '{"object": "error", "message": "max_tokens must be at least 1", '
            '"type": "BadRequestError", "code": 400}',
            BadRequest,
        ),
        (500, '{"error": {"message": "bad field", "type": "invalid_request_error"}}', BadRequest),
        (500, '{"detail": [{"loc": ["body", "messages"], "msg": "Field required"}]}', BadRequest),
        (503, '{"error": {"message": "slow down", "code": 429}}', RateLimited),
        (
            500,
            '{"error": {"message": "maximum context length is 8192 tokens", "code": "400"}}',
            ContextLengthExceeded,
        ),
        (500, '{"error": {"message": "boom", "type": "server_error"}}', Overloaded),
        (503, '{"error": {"code": 503, "status": "UNAVAILABLE"}}', Overloaded),
    ],
)
def test_a_server_error_whose_body_is_a_request_error_is_not_retried(
    status: int, body: str, expected: type[ModelError]
) -> None:
    # covers issue 12 (errors classified by status and body: bad requests never retried)
    error = error_from_status(status, body, {}, vendor="vllm")
    assert type(error) is expected
    assert error.status == status  # the HTTP status is kept as sent
    assert error.retryable == (expected in (RateLimited, Overloaded))
