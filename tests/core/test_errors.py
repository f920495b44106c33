"""The exception hierarchy: roots, and what retry and fallback read off a model error."""

import pytest

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    BastionError,
    ConcurrentRunError,
    ConnectionFailed,
    ContentFiltered,
    ContextLengthExceeded,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
    RunError,
    RunFailed,
    ScriptExhausted,
    UserError,
)


@pytest.mark.parametrize(
    ("error_class", "retryable", "fallback_eligible"),
    [
        (RateLimited, True, True),
        (Overloaded, True, True),
        (ContextLengthExceeded, False, True),
        (AuthenticationFailed, False, False),
        (BadRequest, False, False),
        (ModelTimeout, True, False),
        (ConnectionFailed, True, False),
        (ContentFiltered, False, False),
        (ModelError, False, False),
    ],
)
def test_model_errors_say_whether_to_retry_or_fall_back(
    error_class: type[ModelError], retryable: bool, fallback_eligible: bool
):
    # covers G-65, A-27
    error = error_class("boom")
    assert (error.retryable, error.fallback_eligible) == (retryable, fallback_eligible)
    assert isinstance(error, ModelError)
    assert isinstance(error, RunError)
    assert isinstance(error, BastionError)


def test_model_error_keeps_status_body_and_retry_after():
    # covers G-65
    headers = {"retry-after": "2"}
    error = RateLimited(
        "slow down",
        status=429,
        body='{"error": {"type": "rate_limit"}}',
        vendor_code="rate_limit",
        retry_after=2.0,
        headers=headers,
    )
    assert str(error) == "slow down"
    assert error.message == "slow down"
    assert error.status == 429
    assert error.body == '{"error": {"type": "rate_limit"}}'
    assert error.vendor_code == "rate_limit"
    assert error.retry_after == 2.0
    assert error.headers == headers
    headers["retry-after"] = "99"
    assert error.headers == {"retry-after": "2"}
    assert repr(error) == "RateLimited('slow down', status=429)"


def test_model_error_attributes_default_to_none():
    # covers G-65
    error = ConnectionFailed("reset")
    assert (error.status, error.body, error.vendor_code, error.retry_after) == (None,) * 4
    assert error.headers == {}


def test_misuse_and_run_failures_are_separate_roots():
    # covers G-65, C11
    assert issubclass(UserError, BastionError)
    assert issubclass(ConcurrentRunError, UserError)
    assert issubclass(RunError, BastionError)
    assert not issubclass(UserError, RunError)
    assert not issubclass(RunError, UserError)
    assert issubclass(ScriptExhausted, RunError)


def test_run_failed_carries_the_failure_code():
    #
    error = RunFailed("run failed: guardrail", code="guardrail_blocked")
    assert error.code == "guardrail_blocked"
    assert str(error) == "run failed: guardrail"
    with pytest.raises(RunError, match="guardrail"):
        raise error
