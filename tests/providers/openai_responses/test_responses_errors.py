"""HTTP error responses of ``POST /responses`` → Bastion's model-error taxonomy.

SPEC G-63 (vendor errors mapped at the adapter boundary), C3.
"""

from __future__ import annotations

import json

import httpx
import pytest

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContextLengthExceeded,
    ModelError,
    ModelRequest,
    Overloaded,
    RateLimited,
    UserMessage,
)

from ._support import model_for

REQUEST = ModelRequest(messages=[UserMessage(content="hi")])


def error_body(message: str, type_: str, code: str | None, param: str | None = None) -> bytes:
    error = {"message": message, "type": type_, "param": param, "code": code}
    return json.dumps({"error": error}).encode()


async def failure(response: httpx.Response) -> ModelError:
    model, _ = model_for(response)
    with pytest.raises(ModelError) as info:
        await model.request(REQUEST)
    return info.value


async def test_400_context_length_exceeded() -> None:
    # covers G-63
    body = error_body(
        "Your input exceeds the context window of this model. Please adjust your input and try "
        "again.",
        "invalid_request_error",
        "context_length_exceeded",
        "input",
    )
    error = await failure(httpx.Response(400, content=body))
    assert type(error) is ContextLengthExceeded
    assert (error.status, error.vendor_code, error.body) == (
        400,
        "context_length_exceeded",
        body.decode(),
    )
    assert error.fallback_eligible


async def test_401_invalid_api_key() -> None:
    # covers G-63
    body = error_body(
        "Incorrect API key provided: sk-test. You can find your API key at "
        "https://platform.openai.com/account/api-keys.",
        "invalid_request_error",
        "invalid_api_key",
    )
    error = await failure(httpx.Response(401, content=body))
    assert type(error) is AuthenticationFailed
    assert error.status == 401
    assert not error.retryable


async def test_429_rate_limited_keeps_retry_after() -> None:
    # covers G-63
    body = error_body(
        "Rate limit reached for gpt-4.1 in organization org-abc on tokens per min (TPM): "
        "Limit 30000, Used 30000, Requested 1200. Please try again in 2.4s.",
        "tokens",
        "rate_limit_exceeded",
    )
    error = await failure(httpx.Response(429, content=body, headers={"retry-after": "3"}))
    assert type(error) is RateLimited
    assert (error.status, error.retry_after) == (429, 3.0)
    assert error.headers["retry-after"] == "3"
    assert error.retryable


async def test_500_server_error() -> None:
    # covers G-63
    body = error_body(
        "The server had an error while processing your request. Sorry about that!",
        "server_error",
        None,
    )
    error = await failure(httpx.Response(500, content=body))
    assert type(error) is Overloaded
    assert error.status == 500
    assert error.retryable


async def test_400_unknown_code_is_bad_request() -> None:
    # covers G-63
    body = error_body(
        "Invalid type for 'input': expected a list.", "invalid_request_error", "invalid_type"
    )
    error = await failure(httpx.Response(400, content=body))
    assert type(error) is BadRequest
    assert error.vendor_code == "invalid_type"


async def test_non_json_error_body_falls_back_to_the_status() -> None:
    # covers G-63
    error = await failure(httpx.Response(503, content=b"<html>upstream unavailable</html>"))
    assert type(error) is Overloaded
    assert error.body == "<html>upstream unavailable</html>"
