"""Every protocol and every error status maps to the same taxonomy, through the HTTP path.

Issue 3 asks each adapter to map 400/401/413/429/500/529; vendor-specific bodies are in each
adapter's own tests, this matrix pins the common behaviour for all five at once.
"""

from __future__ import annotations

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
from bastion.providers import resolve_model

SPECS = [
    "openai:gpt-4.1-mini",
    "openai-responses:gpt-4.1-mini",
    "anthropic:claude-sonnet-4-5",
    "ollama:qwen2.5",
    "gemini:gemini-2.5-flash",
]
STATUSES: list[tuple[int, type[ModelError]]] = [
    (400, BadRequest),
    (401, AuthenticationFailed),
    (413, ContextLengthExceeded),
    (429, RateLimited),
    (500, Overloaded),
    (529, Overloaded),
]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize(("status", "expected"), STATUSES)
async def test_status_maps_to_the_taxonomy_for_every_protocol(
    spec: str, status: int, expected: type[ModelError]
) -> None:
    # covers issue 3 (errors mapped at the boundary, carrying status, body and retry-after)
    body = '{"error": {"message": "something went wrong"}}'

    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(status, headers={"retry-after": "3"}, content=body.encode())

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = resolve_model(spec, api_key="test-key", base_url="http://mock", http_client=client)
    with pytest.raises(ModelError) as info:
        await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    error = info.value
    assert type(error) is expected
    assert error.status == status
    assert error.body == body
    if status == 429:
        assert error.retry_after == 3.0


@pytest.mark.parametrize("spec", SPECS)
async def test_an_unreachable_server_is_a_connection_failure(spec: str) -> None:
    # covers issue 3 (ConnectionFailed), A-27 (retried)
    def handler(request: httpx.Request) -> httpx.Response:
        raise httpx.ConnectError("connection refused", request=request)

    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = resolve_model(spec, api_key="test-key", base_url="http://mock", http_client=client)
    with pytest.raises(ModelError) as info:
        await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert type(info.value).__name__ == "ConnectionFailed"
    assert info.value.retryable
