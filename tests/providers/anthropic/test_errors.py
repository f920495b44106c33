"""HTTP and stream errors of the Messages API → the model-error taxonomy (SPEC G-63)."""

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
    ModelTimeout,
    Overloaded,
    RateLimited,
    UserMessage,
)

from ._support import Server

HELLO = ModelRequest(messages=[UserMessage(content="Hello")])


def _error(status: int, kind: str, message: str, **headers: str) -> httpx.Response:
    body = {"type": "error", "error": {"type": kind, "message": message}}
    return httpx.Response(status, json=body, headers=headers)


@pytest.mark.parametrize(
    ("response", "expected", "code"),
    [
        (
            _error(
                400, "invalid_request_error", "prompt is too long: 208310 tokens > 200000 maximum"
            ),
            ContextLengthExceeded,
            "invalid_request_error",
        ),
        (
            _error(400, "invalid_request_error", "messages: roles must alternate"),
            BadRequest,
            "invalid_request_error",
        ),
        (
            _error(401, "authentication_error", "invalid x-api-key"),
            AuthenticationFailed,
            "authentication_error",
        ),
        (_error(403, "permission_error", "no access"), AuthenticationFailed, "permission_error"),
        (_error(404, "not_found_error", "model: claude-x"), BadRequest, "not_found_error"),
        (
            _error(
                413, "request_too_large", "Request exceeds the maximum allowed number of bytes."
            ),
            ContextLengthExceeded,
            "request_too_large",
        ),
        (_error(500, "api_error", "Internal server error"), Overloaded, "api_error"),
        (_error(529, "overloaded_error", "Overloaded"), Overloaded, "overloaded_error"),
        (httpx.Response(502, text="<html>Bad gateway</html>"), Overloaded, None),
        (
            httpx.Response(418, json={"type": "error", "error": {"type": "teapot"}}),
            BadRequest,
            "teapot",
        ),
    ],
)
async def test_http_errors(
    response: httpx.Response, expected: type[ModelError], code: str | None
) -> None:
    # covers G-63
    server = Server(response)
    with pytest.raises(ModelError) as caught:
        await server.model().request(HELLO)
    error = caught.value
    assert type(error) is expected
    assert error.status == response.status_code
    assert error.vendor_code == code
    assert error.body is not None


async def test_rate_limit_keeps_retry_after() -> None:
    # covers G-63
    response = _error(429, "rate_limit_error", "Number of request tokens has exceeded your limit.")
    response.headers["retry-after"] = "17"
    with pytest.raises(RateLimited) as caught:
        await Server(response).model().request(HELLO)
    error = caught.value
    assert error.retry_after == 17.0
    assert error.retryable
    assert error.fallback_eligible
    assert json.loads(error.body or "")["error"]["type"] == "rate_limit_error"
    assert "rate_limit_error" in str(error)


@pytest.mark.parametrize(
    ("kind", "expected"),
    [
        ("overloaded_error", Overloaded),
        ("rate_limit_error", RateLimited),
        ("api_error", Overloaded),
        ("invalid_request_error", BadRequest),
        ("mystery_error", Overloaded),
    ],
)
async def test_in_stream_error_types(kind: str, expected: type[ModelError]) -> None:
    # covers G-63
    start = {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 3}}}
    error = {"type": "error", "error": {"type": kind, "message": "boom"}}
    body = (
        f"event: message_start\ndata: {json.dumps(start)}\n\n"
        f"event: error\ndata: {json.dumps(error)}\n\n"
    ).encode()
    with pytest.raises(expected) as caught:
        await Server(body).model().request(HELLO)
    assert caught.value.status is None


async def test_500_whose_body_is_a_validation_error_is_not_retried() -> None:
    # covers A-27, C11: the type says the request was invalid; retrying it cannot help
    response = _error(500, "invalid_request_error", "tools.0.input_schema: JSON schema is invalid")
    with pytest.raises(BadRequest) as caught:
        await Server(response).model().request(HELLO)
    assert caught.value.status == 500
    assert not caught.value.retryable
    assert not caught.value.fallback_eligible


@pytest.mark.parametrize(
    ("kind", "expected", "retryable"),
    [
        ("overloaded_error", Overloaded, True),
        ("invalid_request_error", BadRequest, False),
        ("rate_limit_error", RateLimited, True),
        ("billing_error", RateLimited, False),
        ("timeout_error", ModelTimeout, True),
    ],
)
async def test_in_stream_errors_after_text_are_classified_by_type(
    kind: str, expected: type[ModelError], retryable: bool
) -> None:
    # covers A-27, C11: the error arrives inside a 200 stream, after some text
    events: list[tuple[str, dict[str, object]]] = [
        ("message_start", {"type": "message_start", "message": {"id": "m", "usage": {}}}),
        (
            "content_block_start",
            {"type": "content_block_start", "index": 0, "content_block": {"type": "text"}},
        ),
        (
            "content_block_delta",
            {
                "type": "content_block_delta",
                "index": 0,
                "delta": {"type": "text_delta", "text": "Par"},
            },
        ),
        ("error", {"type": "error", "error": {"type": kind, "message": "stopped"}}),
    ]
    body = "".join(f"event: {k}\ndata: {json.dumps(d)}\n\n" for k, d in events).encode()
    with pytest.raises(expected) as caught:
        await Server(body).model().request(HELLO)
    assert caught.value.retryable is retryable
    assert caught.value.vendor_code == kind
