"""Transcript tests: OpenAI Responses SSE bodies → chunks and assembled responses.

SPEC C2 (usage), C3 (streaming chunks), C9 (tool names), G-63 (provider transcripts).
"""

from __future__ import annotations

import pytest

from bastion.core import (
    FinishChunk,
    MalformedResponse,
    ModelRequest,
    Overloaded,
    RateLimited,
    ReasoningChunk,
    ReasoningPart,
    StreamChunk,
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

from ._support import model_for, sse, transcript

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather at a place.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)


def ask(text: str = "hi", *tools: ToolDefinition) -> ModelRequest:
    return ModelRequest(messages=[UserMessage(content=text)], tools=tools)


async def test_text_streams_as_text_chunks() -> None:
    # covers G-63, C3
    model, server = model_for(sse(transcript("text")))
    chunks: list[StreamChunk] = [c async for c in model.stream(ask())]
    assert chunks[:-1] == [
        TextChunk(text="Hi"),
        TextChunk(text=" there"),
        TextChunk(text="! How can I help?"),
    ]
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "stop"
    assert finish.provider_details == {
        "response_id": "resp_67c9fdcecf488190bdd9a0409de3a1ec07b8b0ad4e5eb654"
    }
    assert server.urls == ["https://api.openai.com/v1/responses"]
    assert server.headers[0]["authorization"] == "Bearer sk-test"


async def test_text_response_usage_and_cost() -> None:
    # covers G-63, C2
    model, _ = model_for(sse(transcript("text")), name="gpt-4.1-mini")
    response = await model.request(ask())
    assert response.message.text == "Hi there! How can I help?"
    assert response.finish_reason == "stop"
    assert response.usage.prompt_tokens == 37
    assert response.usage.completion_tokens == 11
    assert response.usage.requests == 1
    assert response.usage.cost_usd == pytest.approx((37 * 0.40 + 11 * 1.60) / 1_000_000)
    assert response.model == "openai-responses:gpt-4.1-mini"


async def test_one_function_call() -> None:
    # covers G-63, C3, C9
    model, _ = model_for(sse(transcript("one_call")))
    chunks = [c async for c in model.stream(ask("weather?", WEATHER))]
    assert chunks[:-1] == [
        ToolCallStartChunk(id="call_12345xyz", name="get_weather"),
        ToolCallDeltaChunk(id="call_12345xyz", arguments_delta='{"'),
        ToolCallDeltaChunk(id="call_12345xyz", arguments_delta="location"),
        ToolCallDeltaChunk(id="call_12345xyz", arguments_delta='":"'),
        ToolCallDeltaChunk(id="call_12345xyz", arguments_delta="Paris, France"),
        ToolCallDeltaChunk(id="call_12345xyz", arguments_delta='"}'),
        ToolCallEndChunk(id="call_12345xyz", provider_details={"id": "fc_12345xyz"}),
    ]
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "tool_calls"


async def test_two_function_calls_assemble_in_order() -> None:
    # covers G-63, C3
    model, _ = model_for(sse(transcript("two_calls")))
    response = await model.request(ask("weather?", WEATHER))
    assert [(c.id, c.name, c.args()) for c in response.message.tool_calls] == [
        ("call_unLAR8MvFNptuiZK6K6HCy5k", "get_weather", {"location": "Paris, France"}),
        ("call_8Qh3Kd2mTzYQ3kRnCDFc5vLx", "get_weather", {"location": "Bogotá, Colombia"}),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.incomplete_tool_calls == []


async def test_tool_names_map_back_to_local_names() -> None:
    # covers C9
    dotted = ToolDefinition(name="srv.get.weather", description="d", parameters={})
    body = transcript("one_call").replace(b'"get_weather"', b'"srv__get__weather"')
    model, server = model_for(sse(body))
    response = await model.request(ask("weather?", dotted))
    assert server.bodies[0]["tools"][0]["name"] == "srv__get__weather"
    assert response.message.tool_calls[0].name == "srv.get.weather"


async def test_reasoning_summary_and_encrypted_content() -> None:
    # covers G-63, C3, A-11
    model, server = model_for(sse(transcript("reasoning_call")), name="o4-mini")
    chunks = [c async for c in model.stream(ask("weather?", WEATHER))]
    reasoning = [c for c in chunks if isinstance(c, ReasoningChunk)]
    assert [c.text for c in reasoning] == [
        "**Checking the weather**\n\n",
        "The user wants Paris weather, so I'll call the tool.",
        "",
    ]
    details = reasoning[-1].provider_details
    assert details is not None
    assert details["id"] == "rs_6876cf02e0bc8192b74af0fb64b715ff06fa2fcced15a5ac"
    assert details["encrypted_content"].startswith("gAAAAAB")
    assert server.bodies[0]["include"] == ["reasoning.encrypted_content"]
    assert server.bodies[0]["store"] is False


async def test_usage_with_cached_and_reasoning_tokens() -> None:
    # covers C2, G-63
    model, _ = model_for(sse(transcript("reasoning_call")), name="o4-mini")
    response = await model.request(ask("weather?", WEATHER))
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (1251, 282)
    assert (usage.cached_read_tokens, usage.reasoning_tokens) == (1024, 256)
    assert usage.total_tokens == 1251 + 282
    expected = ((1251 - 1024) * 1.10 + 1024 * 0.275 + 282 * 4.40) / 1_000_000
    assert usage.cost_usd == pytest.approx(expected)


async def test_structured_output_text_is_the_json() -> None:
    # covers G-63, A-12
    model, _ = model_for(sse(transcript("structured")))
    response = await model.request(ask("extract"))
    assert response.message.text == (
        '{"name":"Science Fair","date":"Friday","participants":["Alice","Bob"]}'
    )
    assert response.finish_reason == "stop"


async def test_incomplete_max_output_tokens_is_length() -> None:
    # covers G-63, C3
    model, _ = model_for(sse(transcript("incomplete")))
    response = await model.request(ask("story"))
    assert response.finish_reason == "length"
    assert response.message.parts == [TextPart(text="Once upon a time")]
    assert response.usage == Usage(
        prompt_tokens=20, completion_tokens=16, requests=1, cost_usd=response.usage.cost_usd
    )


async def test_incomplete_content_filter() -> None:
    # covers C3
    body = transcript("incomplete").replace(b'"max_output_tokens"}', b'"content_filter"}')
    model, _ = model_for(sse(body))
    response = await model.request(ask("story"))
    assert response.finish_reason == "content_filter"


async def test_response_failed_in_stream_is_mapped() -> None:
    # covers G-63, C3
    model, _ = model_for(sse(transcript("failed")))
    with pytest.raises(Overloaded) as info:
        await model.request(ask())
    assert info.value.vendor_code == "server_error"
    assert "server had an error" in info.value.message


async def test_error_event_is_mapped() -> None:
    # covers G-63, C3
    model, _ = model_for(sse(transcript("error_event")))
    with pytest.raises(RateLimited) as info:
        await model.request(ask())
    assert info.value.vendor_code == "rate_limit_exceeded"
    assert info.value.status is None


async def test_truncated_stream_is_malformed() -> None:
    # covers G-63, C3
    model, _ = model_for(sse(transcript("truncated")))
    with pytest.raises(MalformedResponse, match="truncated"):
        await model.request(ask())


async def test_arguments_before_their_item_are_malformed() -> None:
    # covers C3
    body = (
        b"event: response.function_call_arguments.delta\n"
        b'data: {"type":"response.function_call_arguments.delta","item_id":"fc_1",'
        b'"output_index":0,"delta":"{}","sequence_number":1}\n\n'
    )
    model, _ = model_for(sse(body))
    with pytest.raises(MalformedResponse, match="before the item was added"):
        await model.request(ask())


async def test_items_without_deltas_take_text_from_the_done_items() -> None:
    # covers C3: a server (or proxy) that sends only finished items still assembles
    lines = [
        line
        for line in transcript("reasoning_call").split(b"\n\n")
        if b"delta" not in line.split(b"\n")[0]
    ]
    model, _ = model_for(sse(b"\n\n".join(lines)), name="o4-mini")
    response = await model.request(ask("weather?", WEATHER))
    part = response.message.parts[0]
    assert isinstance(part, ReasoningPart)
    assert part.text.startswith("**Checking the weather**")
    assert response.message.tool_calls == [
        ToolCall(
            id="call_Rtr8Q3fsUp0mYFcz7fI2fp0m",
            name="get_weather",
            arguments='{"location":"Paris, France"}',
            provider_details={
                "id": "fc_6876cf035d1481929e6fe2e1e3b5a3a806fa2fcced15a5ac",
                "after_reasoning": "rs_6876cf02e0bc8192b74af0fb64b715ff06fa2fcced15a5ac",
            },
        )
    ]
