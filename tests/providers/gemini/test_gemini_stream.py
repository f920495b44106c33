"""Recorded ``streamGenerateContent`` answers → assembled responses, chunks and usage."""

from __future__ import annotations

import json
import re

import pytest

from bastion.core import (
    ContentFiltered,
    FinishChunk,
    MalformedResponse,
    ModelRequest,
    ReasoningChunk,
    ReasoningPart,
    StreamChunk,
    TextChunk,
    TextPart,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolDefinition,
    UserMessage,
)

from ._support import model_for

ASK = ModelRequest(messages=[UserMessage(content="hi")])
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather for a city.",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
)


async def chunks_of(name: str, request: ModelRequest = ASK) -> list[StreamChunk]:
    model, _ = model_for(name)
    return [chunk async for chunk in model.stream(request)]


async def test_text_streams_as_text_chunks_then_finish() -> None:
    # covers A-11, C3
    chunks = await chunks_of("text.sse")
    assert chunks[:3] == [TextChunk(text="Hello"), TextChunk(text=", world"), TextChunk(text="!")]
    finish = chunks[3]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "stop"
    assert finish.provider_details == {
        "model_version": "gemini-2.5-flash",
        "response_id": "mUcpaP3JBYmFm9IP6dKa4Ao",
        "finish_reason": "STOP",
    }
    assert len(chunks) == 4


async def test_text_assembles_with_usage_and_cost() -> None:
    # covers A-12, C2
    model, _ = model_for("text.sse")
    response = await model.request(ASK)
    assert response.message.text == "Hello, world!"
    assert response.finish_reason == "stop"
    assert response.model == "gemini:gemini-2.5-flash"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (8, 4)
    assert response.usage.total_tokens == 12
    assert response.usage.requests == 1
    assert response.usage.cost_usd == pytest.approx((8 * 0.30 + 4 * 2.50) / 1_000_000)


async def test_function_call_gets_an_id_and_whole_arguments() -> None:
    # covers A-11, C3
    chunks = await chunks_of(
        "function_call.sse", ModelRequest(messages=ASK.messages, tools=[WEATHER])
    )
    start = chunks[0]
    assert isinstance(start, ToolCallStartChunk)
    assert re.fullmatch(r"call_[0-9a-f]{32}", start.id)  # Gemini sent none: a fresh one
    assert chunks[:3] == [
        ToolCallStartChunk(id=start.id, name="get_weather"),
        ToolCallDeltaChunk(id=start.id, arguments_delta='{"city": "Paris"}'),
        ToolCallEndChunk(id=start.id),
    ]
    assert isinstance(chunks[3], FinishChunk)
    assert chunks[3].finish_reason == "tool_calls"


async def test_two_function_calls_in_order() -> None:
    # covers A-11, C3
    model, _ = model_for("two_function_calls.sse")
    response = await model.request(ModelRequest(messages=ASK.messages, tools=[WEATHER]))
    calls = [(c.name, c.args()) for c in response.message.tool_calls]
    assert calls == [
        ("get_weather", {"city": "Paris"}),
        ("get_weather", {"city": "Tokyo", "unit": "celsius"}),
    ]
    first, second = response.message.tool_calls
    assert first.id != second.id
    assert response.finish_reason == "tool_calls"
    assert response.message.parts == []
    assert response.incomplete_tool_calls == []


async def test_thoughts_and_signature_on_a_function_call() -> None:
    # covers G-63, C9, A-11
    tool = ToolDefinition(name="srv.lookup", description="Look up.", parameters={"type": "object"})
    model, _ = model_for("thought_function_call.sse")
    response = await model.request(ModelRequest(messages=ASK.messages, tools=[tool]))
    assert response.message.parts == [
        ReasoningPart(
            text="**Checking the weather**\nThe user wants Paris.",
            provider_details={"vendor": "gemini"},
        )
    ]
    (call,) = response.message.tool_calls
    assert call.name == "srv.lookup"  # Gemini accepts dots: no renaming
    assert call.provider_details == {
        "thoughtSignature": "CiQB0e2Kb+Yg6ceQ3Jp/kZ2lT5Xr1Nq0wQ7vFzC8mHUa9sE=\u2028tail"
    }
    assert response.usage.reasoning_tokens == 45
    assert response.usage.completion_tokens == 9 + 45


async def test_signature_on_an_answer_part_follows_its_text() -> None:
    # covers G-63, A-11
    chunks = await chunks_of("thought_text.sse")
    assert chunks[:4] == [
        ReasoningChunk(text="Adding two and two.", provider_details={"vendor": "gemini"}),
        TextChunk(text="The answer is "),
        ReasoningChunk(signature="Ev8BCvwBAXLI2nw+sig/B==", provider_details={"vendor": "gemini"}),
        TextChunk(text="4."),
    ]


async def test_structured_output_text_is_the_json() -> None:
    #
    model, _ = model_for("structured_output.sse")
    response = await model.request(ASK)
    assert json.loads(response.message.text) == {"city": "Paris", "temp_c": 21}


async def test_usage_counts_thoughts_and_cache_and_the_last_report_wins() -> None:
    # covers C2, A-12
    model, _ = model_for("usage.sse")
    usage = (await model.request(ASK)).usage
    assert usage.prompt_tokens == 2048
    assert usage.completion_tokens == 3 + 412
    assert usage.reasoning_tokens == 412
    assert usage.cached_read_tokens == 1536
    assert usage.total_tokens == 2048 + 415
    assert usage.provider_metrics is not None
    raw = usage.provider_metrics["usageMetadata"]
    assert raw["totalTokenCount"] == 2048 + 3 + 412
    assert raw["cacheTokensDetails"] == [{"modality": "TEXT", "tokenCount": 1536}]


async def test_safety_finish_is_content_filter() -> None:
    # covers C3
    model, _ = model_for("safety.sse")
    response = await model.request(ASK)
    assert response.finish_reason == "content_filter"
    assert response.message.parts == [TextPart(text="I can")]


async def test_max_tokens_finish_is_length() -> None:
    # covers C3
    model, _ = model_for("max_tokens.sse")
    assert (await model.request(ASK)).finish_reason == "length"


async def test_blocked_prompt_raises_content_filtered() -> None:
    # covers C3
    model, _ = model_for("prompt_blocked.sse")
    with pytest.raises(ContentFiltered, match="PROHIBITED_CONTENT"):
        await model.request(ASK)


async def test_truncated_stream_is_malformed() -> None:
    #
    model, _ = model_for("truncated.sse")
    with pytest.raises(MalformedResponse):
        await model.request(ASK)


@pytest.mark.parametrize(
    "body",
    [
        b'data: {"candidates": [{"content": {"parts": [{"text": 5}]}}]}\n\n',
        b"data: not json\n\n",
        b'data: {"candidates": [{"content": {"parts": [{"text": "hi"}]}}]}\n\n',
    ],
)
async def test_bad_events_are_malformed(body: bytes) -> None:
    #
    model, _ = model_for((200, body))
    with pytest.raises(MalformedResponse):
        await model.request(ASK)


async def test_error_inside_the_stream_is_mapped() -> None:
    #
    event = {"error": {"code": 503, "message": "The model is overloaded.", "status": "UNAVAILABLE"}}
    model, _ = model_for((200, f"data: {json.dumps(event)}\n\n".encode()))
    from bastion.core import Overloaded

    with pytest.raises(Overloaded) as caught:
        await model.request(ASK)
    assert caught.value.status == 503


async def test_unknown_finish_reason_is_error_and_kept() -> None:
    # covers C3
    event = {"candidates": [{"finishReason": "MALFORMED_FUNCTION_CALL", "index": 0}]}
    model, _ = model_for((200, f"data: {json.dumps(event)}\n\n".encode()))
    response = await model.request(ASK)
    assert response.finish_reason == "error"
    assert response.message.provider_details == {"finish_reason": "MALFORMED_FUNCTION_CALL"}
