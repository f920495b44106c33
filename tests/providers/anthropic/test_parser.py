"""Streamed answers of the Messages API, from transcripts (SPEC C3, C16, G-63)."""

from __future__ import annotations

import asyncio
import itertools

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import (
    AssistantMessage,
    FinishChunk,
    MalformedResponse,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSpec,
    Overloaded,
    ReasoningChunk,
    ReasoningPart,
    TextChunk,
    TextPart,
    ToolCall,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolDefinition,
    Usage,
    UserMessage,
)
from bastion.providers.anthropic import anthropic_model

from ._support import Server, sse, transcript

HELLO = ModelRequest(messages=[UserMessage(content="Hello")])
WEATHER = ToolDefinition(
    name="get_weather",
    description="The weather at a location.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)
CITY = OutputSpec(
    name="CityInfo",
    json_schema={
        "type": "object",
        "properties": {"city": {"type": "string"}, "population": {"type": "integer"}},
    },
)


async def test_text_stream_chunks() -> None:
    # covers C3, G-63
    server = Server(transcript("text"))
    chunks = [c async for c in server.model().stream(HELLO)]
    assert chunks[:-1] == [TextChunk(text="Hello"), TextChunk(text="!")]
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "stop"
    assert finish.usage.prompt_tokens == 25
    assert finish.usage.completion_tokens == 15
    assert finish.provider_details == {
        "stop_reason": "end_turn",
        "id": "msg_1nZdL29xx5MUA1yADyHTEsnR8uuvGzszyY",
    }


async def test_text_response_and_request_basics() -> None:
    # covers C3, G-63
    server = Server(transcript("text"))
    response = await server.model().request(HELLO)
    assert response.message.text == "Hello!"
    assert response.finish_reason == "stop"
    assert response.model == "anthropic:claude-sonnet-4-20250514"
    assert server.urls == ["https://api.anthropic.com/v1/messages"]
    assert server.headers[0]["x-api-key"] == "sk-ant-test"
    assert server.headers[0]["anthropic-version"] == "2023-06-01"
    assert server.requests[0] == {
        "model": "claude-sonnet-4-20250514",
        "max_tokens": 4096,
        "messages": [{"role": "user", "content": [{"type": "text", "text": "Hello"}]}],
        "stream": True,
    }


async def test_one_tool_call() -> None:
    # covers C3, C9
    server = Server(transcript("tool_call"))
    request = ModelRequest(messages=[UserMessage(content="Weather in SF?")], tools=[WEATHER])
    chunks = [c async for c in server.model().stream(request)]
    tool_chunks = [c for c in chunks if not isinstance(c, TextChunk | FinishChunk)]
    assert tool_chunks[0] == ToolCallStartChunk(
        id="toolu_01T1x1fJ34qAmk2tNTrN7Up6", name="get_weather"
    )
    assert tool_chunks[-1] == ToolCallEndChunk(id="toolu_01T1x1fJ34qAmk2tNTrN7Up6")
    assert all(isinstance(c, ToolCallDeltaChunk) for c in tool_chunks[1:-1])

    response = await Server(transcript("tool_call")).model().request(request)
    assert response.message.text == "Okay, let's check the weather for San Francisco, CA:"
    assert response.message.tool_calls == [
        ToolCall(
            id="toolu_01T1x1fJ34qAmk2tNTrN7Up6",
            name="get_weather",
            arguments='{"location": "San Francisco, CA", "unit": "fahrenheit"}',
        )
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage.completion_tokens == 89


async def test_two_tool_calls_in_one_message() -> None:
    # covers C3
    server = Server(transcript("two_tool_calls"))
    response = await server.model().request(HELLO)
    assert [(c.id, c.name, c.args()) for c in response.message.tool_calls] == [
        ("toolu_01A09q90qw90lq917835lq9", "get_weather", {"location": "San Francisco, CA"}),
        ("toolu_01B8z7y6x5w4v3u2t1s0r9q", "get_time", {"timezone": "America/Los_Angeles"}),
    ]
    assert response.incomplete_tool_calls == []
    assert response.finish_reason == "tool_calls"


async def test_tool_names_map_back_to_local_names() -> None:
    # covers C9
    body = transcript("tool_call").replace(b'"name":"get_weather"', b'"name":"srv__weather"')
    server = Server(body)
    tool = ToolDefinition(name="srv.weather", description="Weather.", parameters={})
    request = ModelRequest(messages=[UserMessage(content="hi")], tools=[tool])
    response = await server.model().request(request)
    assert server.requests[0]["tools"][0]["name"] == "srv__weather"
    assert response.message.tool_calls[0].name == "srv.weather"


async def test_thinking_with_signature() -> None:
    # covers C16
    server = Server(transcript("thinking_tool"))
    chunks = [c async for c in server.model().stream(HELLO)]
    reasoning = [c for c in chunks if isinstance(c, ReasoningChunk)]
    assert reasoning[-1].signature is not None
    assert reasoning[-1].signature.startswith("EqQBCgIYAhIM1gbcDa9G")

    response = await Server(transcript("thinking_tool")).model().request(HELLO)
    part = response.message.parts[0]
    assert isinstance(part, ReasoningPart)
    assert part.text == (
        "The user wants the weather in Paris. "
        'I should call get_weather with location "Paris, France".'
    )
    assert part.signature == reasoning[-1].signature
    assert response.message.tool_calls[0].args() == {"location": "Paris, France"}


async def test_redacted_thinking_round_trips_as_redacted_part() -> None:
    # covers C16
    response = await Server(transcript("redacted_thinking")).model().request(HELLO)
    part, text = response.message.parts
    assert isinstance(part, ReasoningPart)
    assert part.text == ""
    assert part.provider_details is not None
    assert part.redacted is True
    assert part.provider_details["data"].startswith("EmwKAhgBEgy3va3pzix")
    assert text == TextPart(text="I can't share my reasoning on that, but the answer is 42.")

    server = Server(transcript("text"))
    follow_up = ModelRequest(
        messages=[UserMessage(content="Q"), response.message, UserMessage(content="More?")]
    )
    await server.model().request(follow_up)
    assert server.requests[0]["messages"][1] == {
        "role": "assistant",
        "content": [
            {"type": "redacted_thinking", "data": part.provider_details["data"]},
            {"type": "text", "text": "I can't share my reasoning on that, but the answer is 42."},
        ],
    }


async def test_redacted_flag_on_part_is_honoured() -> None:
    # covers C16
    server = Server(transcript("text"))
    part = ReasoningPart(redacted=True, provider_details={"data": "opaque"})
    request = ModelRequest(
        messages=[UserMessage(content="Q"), AssistantMessage(parts=[part, TextPart(text="A")])]
    )
    await server.model().request(request)
    assert server.requests[0]["messages"][1]["content"][0] == {
        "type": "redacted_thinking",
        "data": "opaque",
    }


async def test_structured_output_via_forced_tool() -> None:
    # covers C3, A-11
    server = Server(transcript("structured_output"))
    request = ModelRequest(messages=[UserMessage(content="Paris?")], output=CITY)
    response = await server.model().request(request)
    assert response.message.text == '{"city": "Paris", "population": 2102650}'
    assert response.message.tool_calls == []
    assert response.finish_reason == "stop"
    body = server.requests[0]
    assert body["tools"] == [
        {
            "name": "CityInfo",
            "description": "Give the final answer by calling this tool with the answer as input.",
            "input_schema": CITY.json_schema,
        }
    ]
    assert body["tool_choice"] == {"type": "tool", "name": "CityInfo"}


async def test_structured_output_with_tools_and_thinking_choices() -> None:
    #
    server = Server(transcript("structured_output"), transcript("structured_output"))
    model = server.model()
    with_tools = ModelRequest(messages=[UserMessage(content="x")], tools=[WEATHER], output=CITY)
    await model.request(with_tools)
    assert server.requests[0]["tool_choice"] == {"type": "any"}
    assert [t["name"] for t in server.requests[0]["tools"]] == ["get_weather", "CityInfo"]
    thinking = ModelRequest(
        messages=[UserMessage(content="x")],
        output=CITY,
        settings=ModelSettings(extra={"thinking": {"type": "enabled", "budget_tokens": 2048}}),
    )
    await model.request(thinking)
    assert server.requests[1]["tool_choice"] == {"type": "auto"}
    assert server.requests[1]["thinking"] == {"type": "enabled", "budget_tokens": 2048}


async def test_usage_with_cache_write_and_read() -> None:
    # covers C2
    server = Server(transcript("cache_usage"), transcript("cache_read"))
    model = server.model()
    written = await model.request(HELLO)
    assert written.finish_reason == "length"
    usage = written.usage
    assert (usage.prompt_tokens, usage.cache_write_tokens, usage.cached_read_tokens) == (
        21 + 188086,
        188086,
        0,
    )
    assert usage.completion_tokens == 393
    assert usage.requests == 1
    # claude-sonnet-4: $3/M input, $3.75/M cache write, $15/M output
    assert usage.cost_usd == pytest.approx((21 * 3 + 188086 * 3.75 + 393 * 15) / 1e6)

    read = (await model.request(HELLO)).usage
    assert (read.prompt_tokens, read.cached_read_tokens, read.completion_tokens) == (
        7 + 188086,
        188086,
        5,
    )
    assert read.cost_usd == pytest.approx((7 * 3 + 188086 * 0.30 + 5 * 15) / 1e6)


async def test_in_stream_overloaded_error() -> None:
    # covers C3, G-63
    server = Server(transcript("stream_error"))
    with pytest.raises(Overloaded) as caught:
        await server.model().request(HELLO)
    assert caught.value.vendor_code == "overloaded_error"
    assert caught.value.retryable


@pytest.mark.parametrize("how", ["early", "mid-json", "no-message-stop"])
async def test_truncated_stream_is_malformed(how: str) -> None:
    # covers C3, G-63
    full = transcript("tool_call")
    cuts = {
        "early": full[:200],
        "mid-json": full[:-10],
        "no-message-stop": full.split(b"event: message_stop")[0],
    }
    server = Server(cuts[how])
    with pytest.raises(MalformedResponse):
        await server.model().request(HELLO)


@pytest.mark.parametrize(
    "body",
    [
        b'event: content_block_start\ndata: {"type":"content_block_start","index":0}\n\n',
        b'event: message_start\ndata: {"type":"message_start","message":[]}\n\n',
        b"event: message_start\ndata: {not json\n\n",
        b'data: {"type":"message_start","message":{}}\n\n'
        b'data: {"type":"content_block_delta","index":3,"delta":{"type":"text_delta"}}\n\n',
    ],
)
async def test_out_of_order_or_malformed_events(body: bytes) -> None:
    # covers C3
    with pytest.raises(MalformedResponse):
        await Server(body).model().request(HELLO)


async def test_unknown_blocks_and_events_are_skipped() -> None:
    # covers C3
    extra = (
        b'event: content_block_start\ndata: {"type":"content_block_start","index":5,'
        b'"content_block":{"type":"server_tool_use","id":"srvtoolu_1","name":"web_search",'
        b'"input":{}}}\n\n'
        b'event: content_block_delta\ndata: {"type":"content_block_delta","index":5,'
        b'"delta":{"type":"input_json_delta","partial_json":"{}"}}\n\n'
        b'event: content_block_stop\ndata: {"type":"content_block_stop","index":5}\n\n'
        b'event: future_event\ndata: {"type":"future_event"}\n\n'
    )
    body = transcript("text").replace(b"event: message_delta", extra + b"event: message_delta")
    response = await Server(body).model().request(HELLO)
    assert response.message.text == "Hello!"
    assert response.message.tool_calls == []


# --- any chunking of the bytes assembles the same response -----------------------------

_NAMES = [
    "text",
    "tool_call",
    "two_tool_calls",
    "thinking_tool",
    "redacted_thinking",
    "mixed_thinking",
    "structured_output",
    "structured_native",
    "cache_read",
]
_BODIES = {name: transcript(name) for name in _NAMES}


def _request_over(body: bytes, pieces: list[bytes]) -> ModelResponse:
    def handler(request: httpx.Request) -> httpx.Response:
        return sse(body, pieces)

    async def go() -> ModelResponse:
        async with httpx.AsyncClient(transport=httpx.MockTransport(handler)) as client:
            model = anthropic_model("claude-sonnet-4-20250514", api_key="k", http_client=client)
            return await model.request(HELLO)

    return asyncio.run(go())


def _split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    bounds = [0, *points, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


_EXPECTED = {name: _request_over(body, [body]) for name, body in _BODIES.items()}


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(name=st.sampled_from(_NAMES), cuts=st.lists(st.integers(min_value=0), max_size=40))
def test_any_chunking_assembles_the_same_response(name: str, cuts: list[int]) -> None:
    # covers C3, G-63
    body = _BODIES[name]
    assert _request_over(body, _split(body, cuts)) == _EXPECTED[name]


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    garbage=st.one_of(
        st.binary(max_size=300),
        st.text(max_size=300).map(str.encode),
        st.lists(
            st.sampled_from(
                [
                    b"event: message_start\n",
                    b'data: {"type":"message_start","message":{"usage":{}}}\n',
                    b'data: {"type":"content_block_start","index":0,"content_block":'
                    b'{"type":"tool_use","id":"t","name":"x","input":{}}}\n',
                    b'data: {"type":"content_block_delta","index":0,"delta":{}}\n',
                    b'data: {"type":"content_block_stop","index":1}\n',
                    b'data: {"type":"message_delta","delta":{"stop_reason":7}}\n',
                    b'data: {"type":"error","error":"x"}\n',
                    b"data: [1, 2]\n",
                    b"data: null\n",
                    b"\n",
                ]
            ),
            max_size=20,
        ).map(b"".join),
    )
)
def test_garbage_raises_only_model_errors(garbage: bytes) -> None:
    # covers C3, G-63
    with pytest.raises(ModelError):
        _request_over(garbage, [garbage])


def test_usage_is_a_bastion_usage() -> None:
    # covers C2
    assert isinstance(_EXPECTED["text"].usage, Usage)


async def test_adjacent_thinking_and_redacted_blocks_stay_separate() -> None:
    # covers C16
    response = await Server(transcript("mixed_thinking")).model().request(HELLO)
    reasoning = [p for p in response.message.parts if isinstance(p, ReasoningPart)]
    assert [(p.text, p.signature, p.redacted, p.provider_details) for p in reasoning] == [
        ("First, the plain part.", "EqQBCgIYAhIMsig1", False, None),
        ("", None, True, {"data": "EmwKAhgBEgyRedactedOne"}),
        ("", None, True, {"data": "EmwKAhgBEgyRedactedTwo"}),
        ("Then more.", "EqQBCgIYAhIMsig2", False, None),
    ]
    assert response.message.text == "Done."

    server = Server(transcript("text"))
    request = ModelRequest(messages=[UserMessage(content="Q"), response.message])
    await server.model().request(request)
    assert server.requests[0]["messages"][1]["content"] == [
        {"type": "thinking", "thinking": "First, the plain part.", "signature": "EqQBCgIYAhIMsig1"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgyRedactedOne"},
        {"type": "redacted_thinking", "data": "EmwKAhgBEgyRedactedTwo"},
        {"type": "thinking", "thinking": "Then more.", "signature": "EqQBCgIYAhIMsig2"},
        {"type": "text", "text": "Done."},
    ]
