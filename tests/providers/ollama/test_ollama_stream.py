"""Streamed answers of Ollama's ``/api/chat``: transcripts → chunks and responses.

SPEC G-09 (local Ollama adapter), A-11 (stream chunks), A-12 and C2 (usage with the raw
provider metrics), C3 (finish reasons), C9 (tool names mapped back).
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import (
    BadRequest,
    ContextLengthExceeded,
    FinishChunk,
    MalformedResponse,
    ModelError,
    ModelRequest,
    ModelResponse,
    Overloaded,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolDefinition,
    Usage,
    UserMessage,
)

from ._support import Recorder, ask, model_with, transcript

TEXT_METRICS = {
    "total_duration": 4883583458,
    "load_duration": 1334875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342546000,
    "eval_count": 282,
    "eval_duration": 4535599000,
}


def call_id(created_at: str, n: int) -> str:
    return f"call_{hashlib.sha256(created_at.encode()).hexdigest()[:8]}_{n}"


async def chunks_of(
    body: bytes | list[bytes], request: ModelRequest | None = None
) -> list[StreamChunk]:
    model = model_with(Recorder(body))
    return [c async for c in model.stream(request or ask())]


async def test_text_stream_yields_text_chunks_then_finish_with_usage() -> None:
    # covers G-09, A-11, A-12, C2, C3
    chunks = await chunks_of(transcript("text.ndjson"))
    assert chunks == [
        TextChunk(text="The"),
        TextChunk(text=" sky"),
        TextChunk(text=" is blue."),
        FinishChunk(
            finish_reason="stop",
            usage=Usage(
                prompt_tokens=26, completion_tokens=282, requests=1, provider_metrics=TEXT_METRICS
            ),
            provider_details={"done_reason": "stop"},
        ),
    ]


async def test_text_response_assembles_text_usage_and_model_key() -> None:
    # covers G-09, C2
    response = await model_with(Recorder(transcript("text.ndjson"))).request(ask())
    assert response.message.text == "The sky is blue."
    assert response.finish_reason == "stop"
    assert response.model == "ollama:llama3.2"
    assert response.usage.total_tokens == 308
    assert response.usage.cost_usd is None  # local models have no price


async def test_tool_call_becomes_start_delta_end_with_generated_id() -> None:
    # covers A-11, C3, C9
    tools = [ToolDefinition(name="get_current_weather", description="Weather.", parameters={})]
    request = ModelRequest(messages=[UserMessage(content="Weather in Paris?")], tools=tools)
    chunks = await chunks_of(transcript("tool_call.ndjson"), request)
    cid = call_id("2024-07-22T20:33:28.123648Z", 0)
    assert chunks[:3] == [
        ToolCallStartChunk(id=cid, name="get_current_weather"),
        ToolCallDeltaChunk(
            id=cid, arguments_delta='{"format": "celsius", "location": "Paris, FR"}'
        ),
        ToolCallEndChunk(id=cid),
    ]
    finish = chunks[3]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "tool_calls"
    assert (finish.usage.prompt_tokens, finish.usage.completion_tokens) == (122, 33)


async def test_two_tool_calls_in_one_message_get_distinct_ids() -> None:
    # covers A-11, C3
    response = await model_with(Recorder(transcript("two_tool_calls.ndjson"))).request(ask())
    calls = response.message.tool_calls
    assert [c.args() for c in calls] == [
        {"format": "celsius", "location": "Paris, FR"},
        {"format": "celsius", "location": "Toronto, CA"},
    ]
    assert [c.id for c in calls] == [
        call_id("2024-07-22T20:35:11.512207Z", 0),
        call_id("2024-07-22T20:35:11.512207Z", 1),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.incomplete_tool_calls == []


async def test_sanitized_tool_name_is_mapped_back_to_the_local_name() -> None:
    # covers C9
    body = transcript("tool_call.ndjson").replace(b"get_current_weather", b"srv__weather")
    tools = [ToolDefinition(name="srv.weather", description="Weather.", parameters={})]
    request = ModelRequest(messages=[UserMessage(content="Weather?")], tools=tools)
    recorder = Recorder(body)
    response = await model_with(recorder).request(request)
    assert recorder.json()["tools"][0]["function"]["name"] == "srv__weather"
    assert [c.name for c in response.message.tool_calls] == ["srv.weather"]


async def test_thinking_becomes_reasoning_chunks_before_text() -> None:
    #
    chunks = await chunks_of(transcript("thinking.ndjson"))
    assert chunks[:4] == [
        ReasoningChunk(text="The user asks"),
        ReasoningChunk(text=" how many r's are in strawberry."),
        TextChunk(text="There are"),
        TextChunk(text=' three r\'s in "strawberry".'),
    ]
    response = await model_with(Recorder(transcript("thinking.ndjson"))).request(ask())
    assert response.message.reasoning == "The user asks how many r's are in strawberry."
    assert response.message.text == 'There are three r\'s in "strawberry".'


async def test_structured_output_text_is_the_json_document() -> None:
    # covers G-09
    response = await model_with(Recorder(transcript("structured.ndjson"))).request(ask())
    assert response.message.text == '{"age": 22, "available": true}'


async def test_done_reason_length_maps_to_length() -> None:
    # covers C3
    response = await model_with(Recorder(transcript("length.ndjson"))).request(ask())
    assert response.finish_reason == "length"
    assert response.message.text == "Once upon a"


async def test_error_line_in_stream_raises_mapped_error_after_earlier_chunks() -> None:
    # covers G-09, A-11
    model = model_with(Recorder(transcript("stream_error.ndjson")))
    stream = model.stream(ask())
    assert await anext(stream) == TextChunk(text="The")
    with pytest.raises(Overloaded, match="unexpected EOF") as raised:
        await anext(stream)
    assert raised.value.status is None
    assert raised.value.retryable


@pytest.mark.parametrize(
    ("error", "expected"),
    [
        ('"model \\"qwen3\\" not found, try pulling it first"', BadRequest),
        ('"input length exceeds maximum context length"', ContextLengthExceeded),
        ('{"detail": "odd"}', Overloaded),
    ],
)
async def test_error_line_kinds(error: str, expected: type[ModelError]) -> None:
    # covers G-09
    body = b'{"error":' + error.encode() + b"}\n"
    with pytest.raises(expected):
        await model_with(Recorder(body)).request(ask())


async def test_missing_model_error_line_suggests_ollama_pull() -> None:
    # covers G-09
    body = b'{"error":"model \\"qwen3\\" not found, try pulling it first"}\n'
    with pytest.raises(BadRequest, match=r"ollama pull qwen3"):
        await model_with(Recorder(body)).request(ask())


async def test_stream_without_done_line_is_malformed() -> None:
    #
    with pytest.raises(MalformedResponse, match="truncated"):
        await model_with(Recorder(transcript("truncated.ndjson"))).request(ask())


@pytest.mark.parametrize(
    "body",
    [
        b"[1, 2]\n",
        b"not json\n",
        b'{"message": "text"}\n',
        b'{"message": {"tool_calls": {"x": 1}}}\n',
        b'{"message": {"tool_calls": [{"function": {"arguments": {}}}]}}\n',
        b'{"done": true}\n{"message": {"content": "late"}}\n',
    ],
)
async def test_malformed_lines_raise_malformed_response(body: bytes) -> None:
    #
    with pytest.raises(MalformedResponse):
        await model_with(Recorder(body)).request(ask())


async def test_line_split_across_network_chunks() -> None:
    #
    body = transcript("text.ndjson")
    cut = body.index(b" sky") + 2  # inside the second line's JSON string
    whole = await chunks_of(body)
    assert await chunks_of([body[:cut], body[cut:]]) == whole
    assert await chunks_of([bytes([b]) for b in body]) == whole


async def test_tool_call_ids_from_ollama_are_kept_and_string_arguments_pass_verbatim() -> None:
    #
    body = (
        b'{"message":{"role":"assistant","content":"","tool_calls":[{"id":"call_abc",'
        b'"function":{"index":0,"name":"f","arguments":"{\\"a\\": 1}"}}]},"done":false}\n'
        b'{"message":{"role":"assistant","content":""},"done":true}\n'
    )
    response = await model_with(Recorder(body)).request(ask())
    assert [(c.id, c.name, c.arguments) for c in response.message.tool_calls] == [
        ("call_abc", "f", '{"a": 1}')
    ]
    assert response.usage == Usage(requests=1, unreported_requests=1)  # no counts sent


TRANSCRIPTS = ["text.ndjson", "tool_call.ndjson", "two_tool_calls.ndjson", "thinking.ndjson"]


def respond(body: bytes | list[bytes]) -> ModelResponse:
    return asyncio.run(model_with(Recorder(body)).request(ask()))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from(TRANSCRIPTS), st.data())
def test_any_chunking_assembles_the_same_response(name: str, data: st.DataObject) -> None:
    # covers A-11, C2
    body = transcript(name)
    cuts = sorted(data.draw(st.sets(st.integers(0, len(body)), max_size=12)))
    pieces = [body[a:b] for a, b in zip([0, *cuts], [*cuts, len(body)], strict=True)]
    assert respond(pieces) == respond(body)


@settings(max_examples=100, deadline=None)
@given(st.binary(max_size=300), st.binary(max_size=40))
def test_garbage_bytes_raise_only_model_errors(garbage: bytes, tail: bytes) -> None:
    #
    for body in (garbage, transcript("text.ndjson")[:37] + tail):
        # A response is fine (garbage can happen to be valid); any exception must be a
        # ModelError, never a KeyError or TypeError from the parser.
        with contextlib.suppress(ModelError):
            respond(body)
