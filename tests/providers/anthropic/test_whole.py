"""``ModelSettings(stream=False)``: one ``"stream": false`` request, the same answer.

The non-streamed body is the ``Message`` that the stream's events build up (the vendor's
SDKs accumulate it the same way); :func:`accumulate` folds each transcript into that
message, so every streamed transcript has its whole-body twin. SPEC A-09, A-11, C2.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

from bastion.core import (
    BadRequest,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSpec,
    Overloaded,
    ToolDefinition,
    UserMessage,
)

from ._support import Server, transcript

WEATHER = ToolDefinition(name="get_weather", description="d", parameters={})
CITY = OutputSpec(name="CityInfo", json_schema={"type": "object"})
NAMES = (
    "text",
    "tool_call",
    "two_tool_calls",
    "thinking_tool",
    "mixed_thinking",
    "redacted_thinking",
    "structured_output",
    "cache_usage",
)


def accumulate(sse: bytes) -> dict[str, Any]:
    """The ``Message`` a Messages stream describes."""
    message: dict[str, Any] = {}
    partial: dict[int, str] = {}
    for block in sse.decode().split("\n\n"):
        data = next((line[6:] for line in block.splitlines() if line.startswith("data: ")), None)
        if data is None:
            continue
        event = json.loads(data)
        kind = event["type"]
        if kind == "message_start":
            message = event["message"]
        elif kind == "content_block_start":
            message["content"].append(dict(event["content_block"]))
        elif kind == "content_block_delta":
            target, delta = message["content"][event["index"]], event["delta"]
            if delta["type"] == "text_delta":
                target["text"] += delta["text"]
            elif delta["type"] == "thinking_delta":
                target["thinking"] += delta["thinking"]
            elif delta["type"] == "signature_delta":
                target["signature"] = delta["signature"]
            elif delta["type"] == "input_json_delta":
                partial[event["index"]] = partial.get(event["index"], "") + delta["partial_json"]
        elif kind == "content_block_stop" and event["index"] in partial:
            message["content"][event["index"]]["input"] = json.loads(partial[event["index"]])
        elif kind == "message_delta":
            message.update(event["delta"])
            message["usage"] = {**message["usage"], **event.get("usage", {})}
    return message


def normalised(response: ModelResponse) -> ModelResponse:
    """Tool arguments compared as JSON values (a stream keeps the model's spacing)."""
    for call in response.message.tool_calls:
        call.arguments = json.dumps(json.loads(call.arguments))
    return response


def ask(*, stream: bool | None) -> ModelRequest:
    output = CITY if stream is not None else None
    return ModelRequest(
        messages=[UserMessage(content="hi")],
        tools=[WEATHER],
        output=output,
        settings=ModelSettings(stream=stream),
    )


@pytest.mark.parametrize("name", NAMES)
async def test_whole_body_assembles_what_the_stream_assembles(name: str) -> None:
    #
    request = ModelRequest(
        messages=[UserMessage(content="hi")],
        tools=[WEATHER],
        output=CITY if name == "structured_output" else None,
    )
    streamed = await Server(transcript(name)).model().request(request)
    server = Server(httpx.Response(200, json=accumulate(transcript(name))))
    request.settings = ModelSettings(stream=False)
    whole = await server.model().request(request)
    assert normalised(whole) == normalised(streamed)
    assert server.requests[0]["stream"] is False
    assert server.headers[0]["accept"] == "application/json"
    assert server.urls == ["https://api.anthropic.com/v1/messages"]


async def test_whole_body_chunks_come_in_block_order() -> None:
    #
    server = Server(httpx.Response(200, json=accumulate(transcript("thinking_tool"))))
    request = ModelRequest(
        messages=[UserMessage(content="hi")], tools=[WEATHER], settings=ModelSettings(stream=False)
    )
    kinds = [chunk.type async for chunk in server.model().stream(request)]
    assert kinds == ["reasoning", "tool_call_start", "tool_call_delta", "tool_call_end", "finish"]


async def test_whole_body_without_usage_reads_as_not_reported() -> None:
    # covers C2
    message = accumulate(transcript("text"))
    del message["usage"]
    server = Server(httpx.Response(200, json=message))
    request = ModelRequest(
        messages=[UserMessage(content="hi")], settings=ModelSettings(stream=False)
    )
    usage = (await server.model().request(request)).usage
    assert (usage.requests, usage.unreported_requests, usage.total_tokens) == (1, 1, 0)


async def test_stream_without_usage_reads_as_not_reported() -> None:
    # covers C2: a proxy that strips usage must not read as "0 tokens, free"
    events: list[str] = []
    for block in transcript("text").decode().split("\n\n"):
        if not block.strip():
            continue
        name, data = block.split("\n", 1)
        event = json.loads(data.removeprefix("data: "))
        event.pop("usage", None)
        event.get("message", {}).pop("usage", None)
        events.append(f"{name}\ndata: {json.dumps(event)}\n\n")
    server = Server("".join(events).encode())
    response = await server.model().request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert response.message.text
    assert (response.usage.requests, response.usage.unreported_requests) == (1, 1)
    assert response.usage.cost_usd is None  # not "free": unknown


@pytest.mark.parametrize(
    ("kind", "expected"),
    [("invalid_request_error", BadRequest), ("overloaded_error", Overloaded)],
)
async def test_an_error_body_with_status_200_is_classified_by_type(
    kind: str, expected: type[Exception]
) -> None:
    #
    error = {"type": "error", "error": {"type": kind, "message": "no"}}
    server = Server(httpx.Response(200, json=error))
    request = ModelRequest(
        messages=[UserMessage(content="hi")], settings=ModelSettings(stream=False)
    )
    with pytest.raises(expected):
        await server.model().request(request)
