"""``ModelSettings(stream=False)``: one ``"stream": false`` request, the same answer.

The non-streamed body of ``POST /responses`` is the ``response`` object a stream ends with
(``response.completed``/``response.incomplete``); each transcript's final object is therefore
the whole-body answer of the same call. SPEC A-09, A-11, A-12.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from bastion.core import (
    BadRequest,
    MalformedResponse,
    ModelRequest,
    ModelSettings,
    Overloaded,
    ToolDefinition,
    UserMessage,
)

from ._support import TRANSCRIPTS, model_for, sse, transcript

WEATHER = ToolDefinition(name="get_weather", description="d", parameters={})
NAMES = ("text", "one_call", "two_calls", "reasoning_call", "reasoning_twice", "structured")


def final_response(name: str) -> dict[str, Any]:
    """The last ``response`` object of a streamed transcript."""
    events = [
        json.loads(line[6:])
        for line in transcript(name).decode().splitlines()
        if line.startswith("data: ")
    ]
    ends = ("response.completed", "response.incomplete")
    return next(e["response"] for e in reversed(events) if e["type"] in ends)


def request(*, stream: bool | None) -> ModelRequest:
    return ModelRequest(
        messages=[UserMessage(content="hi")],
        tools=[WEATHER],
        settings=ModelSettings(stream=stream),
    )


@pytest.mark.parametrize("name", [*NAMES, "incomplete"])
async def test_whole_body_assembles_what_the_stream_assembles(name: str) -> None:
    #
    streamed, _ = model_for(sse(transcript(name)), name="o4-mini")
    whole, server = model_for(httpx.Response(200, json=final_response(name)), name="o4-mini")
    expected = await streamed.request(request(stream=None))
    assert await whole.request(request(stream=False)) == expected
    assert server.bodies[0]["stream"] is False
    assert server.headers[0]["accept"] == "application/json"
    assert server.urls == ["https://api.openai.com/v1/responses"]


async def test_whole_body_yields_the_chunks_in_stream_order() -> None:
    #
    body = json.loads((TRANSCRIPTS / "reasoning_twice.json").read_text())
    model, _ = model_for(httpx.Response(200, json=body), name="gpt-5")
    kinds = [chunk.type async for chunk in model.stream(request(stream=False))]
    assert kinds == [
        "reasoning",
        "tool_call_start",
        "tool_call_delta",
        "tool_call_end",
        "reasoning",
        "tool_call_start",
        "tool_call_delta",
        "tool_call_end",
        "finish",
    ]


async def test_streaming_is_still_the_default() -> None:
    #
    model, server = model_for(sse(transcript("text")))
    await model.request(request(stream=None))
    assert server.bodies[0]["stream"] is True
    assert server.headers[0]["accept"] == "text/event-stream"


async def test_failed_whole_response_is_classified_by_its_code() -> None:
    #
    failed: dict[str, Any] = {**final_response("text"), "status": "failed", "usage": None}
    failed["output"] = []
    failed["error"] = {"code": "invalid_prompt", "message": "Invalid prompt: rejected."}
    model, _ = model_for(httpx.Response(200, json=failed))
    with pytest.raises(BadRequest) as info:
        await model.request(request(stream=False))
    assert info.value.vendor_code == "invalid_prompt"
    assert not info.value.retryable

    failed["error"] = {"code": "server_error", "message": "The server had an error."}
    model, _ = model_for(httpx.Response(200, json=failed))
    with pytest.raises(Overloaded):
        await model.request(request(stream=False))


async def test_a_body_that_is_not_json_is_malformed() -> None:
    #
    model, _ = model_for(httpx.Response(200, text="<html>proxy error</html>"))
    with pytest.raises(MalformedResponse, match="not JSON"):
        await model.request(request(stream=False))


async def test_missing_usage_reads_as_not_reported() -> None:
    # covers A-12, C2
    body = {**final_response("text"), "usage": None}
    model, _ = model_for(httpx.Response(200, json=body))
    response = await model.request(request(stream=False))
    assert response.usage.requests == 1
    assert response.usage.unreported_requests == 1
    assert response.usage.total_tokens == 0
    assert response.usage.cost_usd is None  # not "free": unknown
