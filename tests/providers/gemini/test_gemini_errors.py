"""Google error bodies → Bastion's model-error taxonomy."""

from __future__ import annotations

import json

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
from bastion.providers.gemini import GeminiProtocol

from ._support import model_for, transcript

BAD_DELAY = json.dumps(
    {
        "error": {
            "code": 429,
            "status": "RESOURCE_EXHAUSTED",
            "details": [
                {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "soon"}
            ],
        }
    }
)
ASK = ModelRequest(messages=[UserMessage(content="hi")])


@pytest.mark.parametrize(
    ("status", "name", "kind", "code"),
    [
        (400, "error_400_token_limit.json", ContextLengthExceeded, "INVALID_ARGUMENT"),
        (400, "error_400_invalid.json", BadRequest, "INVALID_ARGUMENT"),
        (401, "error_401.json", AuthenticationFailed, "UNAUTHENTICATED"),
        (403, "error_403.json", AuthenticationFailed, "PERMISSION_DENIED"),
        (429, "error_429.json", RateLimited, "RESOURCE_EXHAUSTED"),
        (500, "error_500.json", Overloaded, "INTERNAL"),
        (503, "error_503.json", Overloaded, "UNAVAILABLE"),
        (504, "error_504.json", ModelTimeout, "DEADLINE_EXCEEDED"),
    ],
)
async def test_http_errors_map_by_google_status(
    status: int, name: str, kind: type[ModelError], code: str
) -> None:
    #
    model, _ = model_for((status, name))
    with pytest.raises(ModelError) as caught:
        await model.request(ASK)
    error = caught.value
    assert type(error) is kind
    assert error.status == status
    assert error.vendor_code == code
    assert error.body == transcript(name).decode()
    assert error.message.startswith(f"gemini answered HTTP {status} {code}: ")


async def test_rate_limit_delay_comes_from_retry_info() -> None:
    #
    model, _ = model_for((429, "error_429.json"))
    with pytest.raises(RateLimited) as caught:
        await model.request(ASK)
    assert caught.value.retry_after == 31.0
    assert caught.value.retryable


def test_rate_limit_delay_falls_back_to_the_header() -> None:
    #
    body = '{"error": {"code": 429, "message": "Slow down.", "status": "RESOURCE_EXHAUSTED"}}'
    error = GeminiProtocol().error(429, body, {"Retry-After": "12"})
    assert isinstance(error, RateLimited)
    assert error.retry_after == 12.0


@pytest.mark.parametrize(
    ("status", "body", "kind"),
    [
        (502, "<html>Bad Gateway</html>", Overloaded),
        (
            404,
            '[{"error": {"code": 404, "message": "models/x is not found", "status": "NOT_FOUND"}}]',
            BadRequest,
        ),
        (
            400,
            '{"error": {"code": 400, "message": "bad", "status": "FAILED_PRECONDITION"}}',
            BadRequest,
        ),
        (
            429,
            BAD_DELAY,
            RateLimited,
        ),
    ],
)
def test_other_bodies_fall_back_to_the_http_status(
    status: int, body: str, kind: type[ModelError]
) -> None:
    #
    error = GeminiProtocol().error(status, body, {})
    assert type(error) is kind
    assert error.status == status
