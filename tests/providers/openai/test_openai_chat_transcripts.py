"""Transcript tests of the OpenAI Chat Completions parser, over httpx MockTransport.

The SSE bodies in ``tests/providers/transcripts/openai/`` follow the chunk shapes of
OpenAI's API reference (``chat.completion.chunk``, usage chunk with empty ``choices``,
``data: [DONE]``), and DeepSeek's ``reasoning_content`` deltas.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
from collections.abc import AsyncIterator, Callable, Sequence
from pathlib import Path

import httpx
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ContentFiltered,
    ContextLengthExceeded,
    FinishChunk,
    MalformedResponse,
    ModelError,
    ModelRequest,
    ModelResponse,
    OutputSpec,
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
from bastion.providers import HttpModel
from bastion.providers.openai import openai_chat_model, openai_compatible_model

TRANSCRIPTS = Path(__file__).parent.parent / "transcripts" / "openai"
VALID = [
    "text.sse",
    "tool_call.sse",
    "parallel_tool_calls.sse",
    "reasoning_content.sse",
    "structured_output.sse",
    "usage_cached_reasoning.sse",
]
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather at a place.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)
SEARCH = ToolDefinition(
    name="srv.search",
    description="Search.",
    parameters={"type": "object", "properties": {"q": {"type": "string"}}},
)
REQUEST = ModelRequest(messages=[UserMessage(content="Hi")], tools=[WEATHER, SEARCH])


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


class Pieces(httpx.AsyncByteStream):
    """A response body delivered in the given pieces, as a network would split it."""

    def __init__(self, pieces: Sequence[bytes]) -> None:
        self._pieces = pieces

    async def __aiter__(self) -> AsyncIterator[bytes]:
        for piece in self._pieces:
            yield piece


def responder(
    pieces: Sequence[bytes], status: int = 200, headers: dict[str, str] | None = None
) -> Callable[[httpx.Request], httpx.Response]:
    def handle(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            status,
            headers={"content-type": "text/event-stream", **(headers or {})},
            stream=Pieces(pieces),
        )

    return handle


def model_for(
    pieces: Sequence[bytes],
    status: int = 200,
    headers: dict[str, str] | None = None,
    name: str = "gpt-4o-mini",
) -> HttpModel:
    client = httpx.AsyncClient(transport=httpx.MockTransport(responder(pieces, status, headers)))
    return openai_chat_model(
        name, api_key="sk-test", base_url="https://api.test/v1", http_client=client
    )


async def chunks_of(model: HttpModel, request: ModelRequest = REQUEST) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(request)]


def raw_usage(name: str) -> dict[str, object]:
    """The usage object of a transcript's last data line that has one."""
    found: dict[str, object] = {}
    for line in transcript(name).decode().splitlines():
        if line.startswith("data: {"):
            data = json.loads(line[6:])
            if data.get("usage"):
                found = data["usage"]
    return found


async def test_text_stream() -> None:
    # covers, C2, C3
    chunks = await chunks_of(model_for([transcript("text.sse")]))
    assert chunks[:-1] == [
        TextChunk(text="Hello"),
        TextChunk(text="! How can I"),
        TextChunk(text=" help you today?"),
    ]
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "stop"
    usage = finish.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (19, 10, 29)
    assert usage.requests == 1
    assert usage.provider_metrics == raw_usage("text.sse")
    assert usage.cost_usd == pytest.approx((19 * 0.15 + 10 * 0.60) / 1_000_000)


async def test_one_tool_call() -> None:
    # covers A-11, C3, C9
    chunks = await chunks_of(model_for([transcript("tool_call.sse")]))
    call_id = "call_DdmO9pD3xa9XTPNJ32zg2hcA"
    assert chunks[:-1] == [
        ToolCallStartChunk(id=call_id, name="get_weather"),
        ToolCallDeltaChunk(id=call_id, arguments_delta='{"'),
        ToolCallDeltaChunk(id=call_id, arguments_delta="location"),
        ToolCallDeltaChunk(id=call_id, arguments_delta='":"'),
        ToolCallDeltaChunk(id=call_id, arguments_delta="Paris, France"),
        ToolCallDeltaChunk(id=call_id, arguments_delta='"}'),
        ToolCallEndChunk(id=call_id),
    ]
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "tool_calls"


async def test_parallel_tool_calls_with_interleaved_indexes() -> None:
    # covers A-11, C3, C9
    model = model_for([transcript("parallel_tool_calls.sse")])
    chunks = await chunks_of(model)
    assert [(c.type, getattr(c, "id", None)) for c in chunks] == [
        ("tool_call_start", "call_aaa"),
        ("tool_call_delta", "call_aaa"),
        ("tool_call_start", "call_bbb"),
        ("tool_call_delta", "call_bbb"),
        ("tool_call_delta", "call_aaa"),
        ("tool_call_delta", "call_bbb"),
        ("tool_call_end", "call_aaa"),
        ("tool_call_end", "call_bbb"),
        ("finish", None),
    ]
    # The wire name "srv__search" maps back to the local name "srv.search".
    assert ToolCallStartChunk(id="call_bbb", name="srv.search") in chunks
    response = await model_for([transcript("parallel_tool_calls.sse")]).request(REQUEST)
    assert response.message.tool_calls == [
        ToolCall(id="call_aaa", name="get_weather", arguments='{"location": "Paris"}'),
        ToolCall(id="call_bbb", name="srv.search", arguments='{"q": "paris"}'),
    ]
    assert response.finish_reason == "tool_calls"
    assert response.incomplete_tool_calls == []


async def test_reasoning_content_deltas() -> None:
    #
    client = httpx.AsyncClient(
        transport=httpx.MockTransport(responder([transcript("reasoning_content.sse")]))
    )
    model = openai_compatible_model(
        "deepseek:deepseek-reasoner", api_key="sk-test", http_client=client
    )
    chunks = await chunks_of(model)
    assert chunks[:4] == [
        ReasoningChunk(text="9.11 vs 9.8: compare"),
        ReasoningChunk(text=" tenths, 8 > 1."),
        TextChunk(text="9.8 is"),
        TextChunk(text=" greater."),
    ]
    response = await openai_compatible_model(
        "deepseek:deepseek-reasoner",
        api_key="sk-test",
        http_client=httpx.AsyncClient(
            transport=httpx.MockTransport(responder([transcript("reasoning_content.sse")]))
        ),
    ).request(REQUEST)
    assert response.message.parts == [
        ReasoningPart(text="9.11 vs 9.8: compare tenths, 8 > 1."),
        TextPart(text="9.8 is greater."),
    ]
    assert response.usage.reasoning_tokens == 22
    assert response.model == "deepseek:deepseek-reasoner"


async def test_openrouter_reasoning_field() -> None:
    #
    body = (
        b'data: {"choices":[{"index":0,"delta":{"reasoning":"hmm"}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"content":"ok"},"finish_reason":"stop"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    chunks = await chunks_of(model_for([body]))
    assert chunks[:2] == [ReasoningChunk(text="hmm"), TextChunk(text="ok")]


async def test_structured_output() -> None:
    #
    request = ModelRequest(
        messages=[UserMessage(content="Weather in Paris?")],
        output=OutputSpec(name="weather", json_schema={"type": "object"}),
    )
    response = await model_for([transcript("structured_output.sse")]).request(request)
    assert json.loads(response.message.text) == {"city": "Paris", "temperature_c": 21}
    assert response.finish_reason == "stop"


async def test_usage_with_cached_and_reasoning_tokens() -> None:
    # covers A-12, C2
    response = await model_for(
        [transcript("usage_cached_reasoning.sse")], name="o4-mini-2025-04-16"
    ).request(REQUEST)
    usage = response.usage
    assert usage == Usage(
        prompt_tokens=2006,
        completion_tokens=300,
        reasoning_tokens=256,
        cached_read_tokens=1920,
        requests=1,
        cost_usd=usage.cost_usd,
        provider_metrics=raw_usage("usage_cached_reasoning.sse"),
    )
    assert usage.total_tokens == 2306
    assert usage.cost_usd == pytest.approx((86 * 1.10 + 1920 * 0.275 + 300 * 4.40) / 1_000_000)
    assert response.finish_reason == "length"


@pytest.mark.parametrize(
    ("status", "body_file", "headers", "error", "vendor_code", "retry_after"),
    [
        (
            400,
            "error_400_context_length.json",
            {},
            ContextLengthExceeded,
            "context_length_exceeded",
            None,
        ),
        (401, "error_401.json", {}, AuthenticationFailed, "invalid_api_key", None),
        (413, "error_413.json", {}, ContextLengthExceeded, "invalid_request_error", None),
        (429, "error_429.json", {"retry-after": "2"}, RateLimited, "rate_limit_exceeded", 2.0),
        (500, "error_500.json", {}, Overloaded, "server_error", None),
        (529, "error_529.json", {"retry-after-ms": "1500"}, Overloaded, "server_error", 1.5),
    ],
)
async def test_http_error_statuses(
    status: int,
    body_file: str,
    headers: dict[str, str],
    error: type[ModelError],
    vendor_code: str,
    retry_after: float | None,
) -> None:
    #
    body = transcript(body_file)
    with pytest.raises(ModelError) as caught:
        await chunks_of(model_for([body], status, headers))
    assert type(caught.value) is error
    assert caught.value.status == status
    assert caught.value.body == body.decode()
    assert caught.value.vendor_code == vendor_code
    assert caught.value.retry_after == retry_after


@pytest.mark.parametrize(
    ("status", "error_object", "error"),
    [
        (429, {"type": "insufficient_quota", "code": "insufficient_quota"}, RateLimited),
        (
            400,
            {"type": "invalid_request_error", "code": "content_policy_violation"},
            ContentFiltered,
        ),
        (400, {"type": "invalid_request_error", "code": "content_filter"}, ContentFiltered),
        (400, {"type": "invalid_request_error", "code": "invalid_value"}, BadRequest),
        (
            403,
            {"type": "invalid_request_error", "code": "context_length_exceeded"},
            ContextLengthExceeded,
        ),
    ],
)
async def test_openai_codes_win_over_the_status(
    status: int, error_object: dict[str, str], error: type[ModelError]
) -> None:
    #
    body = json.dumps({"error": {"message": "Refused.", "param": None, **error_object}})
    with pytest.raises(ModelError) as caught:
        await chunks_of(model_for([body.encode()], status))
    assert type(caught.value) is error
    assert caught.value.status == status
    assert caught.value.vendor_code == error_object["code"]


async def test_truncated_stream_is_malformed() -> None:
    #
    with pytest.raises(MalformedResponse):
        await chunks_of(model_for([transcript("truncated.sse")]))
    # Cut at an event boundary: every event parses, but neither finish_reason nor [DONE] came.
    whole = transcript("text.sse")
    cut = whole[: whole.index(b"\n\n", whole.index(b"help you")) + 2]
    with pytest.raises(MalformedResponse, match="ended before it was complete"):
        await chunks_of(model_for([cut]))


async def test_in_stream_error_object() -> None:
    #
    stream = model_for([transcript("stream_error.sse")]).stream(REQUEST)
    assert await anext(stream) == TextChunk(text="Hel")
    with pytest.raises(Overloaded) as caught:
        await anext(stream)
    assert caught.value.vendor_code == "server_error"
    assert "The server had an error" in caught.value.message
    overflow = b'data: {"error":{"message":"Too long.","code":"context_length_exceeded"}}\n\n'
    with pytest.raises(ContextLengthExceeded):
        await chunks_of(model_for([overflow]))


async def test_finish_reason_without_done_is_accepted() -> None:
    # covers C3: some compatible servers end the stream without [DONE].
    body = (
        b'data: {"choices":[{"index":0,"delta":{"content":"x"},'
        b'"finish_reason":"content_filter"}]}\n\n'
    )
    chunks = await chunks_of(model_for([body]))
    assert chunks == [
        TextChunk(text="x"),
        FinishChunk(finish_reason="content_filter", usage=Usage(requests=1, unreported_requests=1)),
    ]


async def test_reused_index_with_a_new_id_is_a_new_call() -> None:
    # covers A-11: servers that send every parallel call at index 0.
    body = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"a",'
        b'"function":{"name":"get_weather","arguments":"{}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"b",'
        b'"function":{"name":"get_weather","arguments":"{}"}}]}}]}\n\n'
        b'data: {"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}\n\n'
        b"data: [DONE]\n\n"
    )
    response = await model_for([body]).request(REQUEST)
    assert [c.id for c in response.message.tool_calls] == ["a", "b"]


def request_once(pieces: Sequence[bytes]) -> ModelResponse:
    async def go() -> ModelResponse:
        return await model_for(pieces).request(REQUEST)

    return asyncio.run(go())


def split(body: bytes, cuts: list[int]) -> list[bytes]:
    points = sorted({c % (len(body) + 1) for c in cuts})
    bounds = [0, *points, len(body)]
    return [body[a:b] for a, b in itertools.pairwise(bounds)]


EXPECTED = {name: request_once([transcript(name)]) for name in VALID}


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(VALID), cuts=st.lists(st.integers(min_value=0), max_size=40))
def test_any_chunking_assembles_the_same_response(name: str, cuts: list[int]) -> None:
    #
    assert request_once(split(transcript(name), cuts)) == EXPECTED[name]


def outcome(pieces: Sequence[bytes]) -> None:
    # Any mapped failure is fine; any other exception fails the test.
    with contextlib.suppress(ModelError):
        request_once(pieces)


@settings(max_examples=100, deadline=None)
@given(garbage=st.binary(max_size=400), cuts=st.lists(st.integers(min_value=0), max_size=8))
def test_garbage_bytes_give_a_model_error(garbage: bytes, cuts: list[int]) -> None:
    #
    with pytest.raises(ModelError):
        request_once(split(garbage, cuts))


json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=5),
    lambda inner: st.lists(inner, max_size=3)
    | st.dictionaries(
        st.sampled_from(
            ["choices", "delta", "index", "content", "tool_calls", "function", "name",
             "arguments", "id", "finish_reason", "usage", "error", "reasoning_content"]
        ),
        inner,
        max_size=4,
    ),
    max_leaves=12,
)  # fmt: skip


@settings(max_examples=150, deadline=None)
@given(events=st.lists(json_values, max_size=6), done=st.booleans())
def test_wrongly_shaped_chunks_never_raise_anything_but_model_errors(
    events: list[object], done: bool
) -> None:
    #
    body = b"".join(b"data: " + json.dumps(e).encode() + b"\n\n" for e in events)
    outcome([body + (b"data: [DONE]\n\n" if done else b"")])
