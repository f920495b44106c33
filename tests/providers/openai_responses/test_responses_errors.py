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


async def test_500_whose_body_is_a_validation_error_is_a_bad_request() -> None:
    # covers A-27, C11: retrying the same invalid request cannot help
    body = error_body(
        "Invalid value for 'input[2].id': reasoning item not found.",
        "invalid_request_error",
        None,
        "input[2].id",
    )
    error = await failure(httpx.Response(500, content=body))
    assert type(error) is BadRequest
    assert error.status == 500
    assert not error.retryable


def stream_of(event: dict[str, object]) -> httpx.Response:
    return httpx.Response(
        200,
        headers={"content-type": "text/event-stream"},
        content=f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode(),
    )


@pytest.mark.parametrize(
    ("code", "kind", "retryable"),
    [
        ("invalid_request_error", BadRequest, False),
        ("invalid_prompt", BadRequest, False),
        ("invalid_image_url", BadRequest, False),
        ("image_too_large", BadRequest, False),
        ("context_length_exceeded", ContextLengthExceeded, False),
        ("rate_limit_exceeded", RateLimited, True),
        ("server_error", Overloaded, True),
        ("400", BadRequest, False),
        ("429", RateLimited, True),
        (503, Overloaded, True),
        ("something_new", Overloaded, True),
    ],
)
async def test_error_event_in_a_200_stream_is_classified_by_its_code(
    code: str | int, kind: type[ModelError], retryable: bool
) -> None:
    # covers A-27, C11
    event = {"type": "error", "code": code, "message": "went wrong", "param": None}
    error = await failure(stream_of({**event, "sequence_number": 3}))
    assert type(error) is kind
    assert error.retryable is retryable
    assert error.status is None or error.status == int(code)


async def test_in_stream_rate_limit_keeps_the_wait_it_asks_for() -> None:
    # covers A-27, C11
    message = "Rate limit reached for gpt-5 on tokens per min (TPM). Please try again in 1.5s."
    event = {"type": "error", "code": "rate_limit_exceeded", "message": message, "param": None}
    error = await failure(stream_of({**event, "sequence_number": 0}))
    assert type(error) is RateLimited
    assert error.retry_after == 1.5

    ms = {**event, "message": "Please try again in 120ms.", "code": "429"}
    error = await failure(stream_of({**ms, "sequence_number": 0}))
    assert type(error) is RateLimited
    assert error.retry_after == pytest.approx(0.12)


async def test_response_failed_with_a_bad_request_code_is_not_retried() -> None:
    # covers A-27, C11
    response: dict[str, object] = {
        "id": "resp_1",
        "object": "response",
        "status": "failed",
        "error": {"code": "invalid_image_format", "message": "Unsupported image format."},
        "output": [],
        "usage": None,
    }
    error = await failure(stream_of({"type": "response.failed", "response": response}))
    assert type(error) is BadRequest
    assert error.vendor_code == "invalid_image_format"
    assert not error.retryable
