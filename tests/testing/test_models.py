"""Scripted test models stream like real providers."""

from collections.abc import AsyncIterator
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import (
    FinishChunk,
    Model,
    ModelRequest,
    RateLimited,
    ReasoningChunk,
    ReasoningPart,
    ScriptExhausted,
    StreamChunk,
    SystemMessage,
    TextChunk,
    TextPart,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    Usage,
    UserError,
    UserMessage,
)
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn


def request(text: str = "hi") -> ModelRequest:
    return ModelRequest(messages=[SystemMessage(content="be nice"), UserMessage(content=text)])


async def collect(model: Model, req: ModelRequest | None = None) -> list[StreamChunk]:
    return [chunk async for chunk in model.stream(req or request())]


async def test_text_streams_word_by_word_then_finishes():
    # covers A-11, C3
    chunks = await collect(ScriptedModel(["Hello big  world"]))
    assert [c for c in chunks if isinstance(c, TextChunk)] == [
        TextChunk(text="Hello "),
        TextChunk(text="big  "),
        TextChunk(text="world"),
    ]
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "stop"
    assert finish.usage.requests == 1
    assert finish.usage.prompt_tokens >= 1
    assert finish.usage.completion_tokens >= 1


@settings(max_examples=100, deadline=None)
@given(st.text(max_size=60))
async def test_streamed_words_join_back_to_the_scripted_text(text: str):
    #
    chunks = await collect(ScriptedModel([text], yield_to_loop=False))
    assert "".join(c.text for c in chunks if isinstance(c, TextChunk)) == text


async def test_a_list_of_deltas_streams_exactly_those_deltas():
    #
    chunks = await collect(ScriptedModel([Turn(text=["Hel", "lo", "!"])]))
    assert [c.text for c in chunks if isinstance(c, TextChunk)] == ["Hel", "lo", "!"]


async def test_tool_calls_stream_as_start_delta_end():
    # covers A-11, C3
    model = ScriptedModel(
        [
            Turn(
                text="Checking.",
                tool_calls=[Call("add", {"a": 1, "b": 2}), Call("raw", '{"bad": ', id="mine")],
            )
        ]
    )
    chunks = await collect(model)
    finish = chunks[-1]
    assert isinstance(finish, FinishChunk)
    assert finish.finish_reason == "tool_calls"
    assert chunks[1:-1] == [
        ToolCallStartChunk(id="call_0_0", name="add"),
        ToolCallDeltaChunk(id="call_0_0", arguments_delta='{"a": 1, "b": 2}'),
        ToolCallEndChunk(id="call_0_0"),
        ToolCallStartChunk(id="mine", name="raw"),
        ToolCallDeltaChunk(id="mine", arguments_delta='{"bad": '),
        ToolCallEndChunk(id="mine"),
    ]


async def test_reasoning_with_signature_comes_first():
    # covers A-11, G-63
    model = ScriptedModel([Turn(text="Yes.", reasoning="think hard", reasoning_signature="sig")])
    response = await model.request(request())
    assert response.message.parts == [
        ReasoningPart(text="think hard", signature="sig"),
        TextPart(text="Yes."),
    ]
    chunks = await collect(ScriptedModel([Turn(reasoning="a b")]))
    assert chunks[:2] == [ReasoningChunk(text="a "), ReasoningChunk(text="b")]


async def test_request_assembles_a_whole_response():
    #
    model = ScriptedModel([Turn(text="Sum is", tool_calls=[Call("add", {"a": 1})])])
    response = await model.request(request())
    assert response.message.text == "Sum is"
    assert [(c.id, c.name, c.args()) for c in response.message.tool_calls] == [
        ("call_0_0", "add", {"a": 1})
    ]
    assert response.finish_reason == "tool_calls"
    assert response.model == "test:scripted"


async def test_explicit_usage_and_finish_reason_are_reported():
    #
    usage = Usage(prompt_tokens=10, completion_tokens=2, requests=1, cost_usd=0.1)
    response = await ScriptedModel([Turn(text="cut", usage=usage, finish_reason="length")]).request(
        request()
    )
    assert (response.usage, response.finish_reason) == (usage, "length")


async def test_unclosed_calls_are_reported_incomplete():
    #
    model = ScriptedModel([Turn(tool_calls=[Call("add", {"a": 1})], unclosed_calls=True)])
    response = await model.request(request())
    assert response.message.tool_calls == []
    assert [c.name for c in response.incomplete_tool_calls] == ["add"]


@pytest.mark.parametrize("error_after", [0, 2])
async def test_an_error_turn_raises_after_n_chunks(error_after: int):
    # covers G-65, A-11
    model = ScriptedModel(
        [
            Turn(
                text="one two three",
                error=RateLimited("slow down", status=429),
                error_after=error_after,
            )
        ]
    )
    received: list[StreamChunk] = []

    async def drain() -> None:
        async for chunk in model.stream(request()):
            received.append(chunk)  # noqa: PERF401 - keep what arrived before the error

    with pytest.raises(RateLimited, match="slow down"):
        await drain()
    assert received == [TextChunk(text="one "), TextChunk(text="two ")][:error_after]


async def test_an_exhausted_script_raises_with_a_helpful_message():
    #
    model = ScriptedModel(["only"], name="tiny")
    await model.request(request())
    assert model.remaining == 0
    with pytest.raises(ScriptExhausted) as info:
        await model.request(request())
    message = str(info.value)
    assert "test:tiny" in message
    assert "turn 2" in message
    assert "1 turn(s)" in message
    assert "Add turns" in message


async def test_requests_are_recorded_in_order():
    #
    model = ScriptedModel(["a", "b"])
    first, second = request("one"), request("two")
    await model.request(first)
    assert model.remaining == 1
    await model.request(second)
    assert model.requests == [first, second]
    assert model.requests[1].messages[-1] == UserMessage(content="two")


async def test_call_ids_are_unique_per_request():
    #
    model = ScriptedModel([Turn(tool_calls=[Call("t")]), Turn(tool_calls=[Call("t")])])
    first = await model.request(request())
    second = await model.request(request())
    assert first.message.tool_calls[0].id != second.message.tool_calls[0].id
    assert first.message.tool_calls[0].arguments == "{}"


# -- FunctionModel --


async def test_function_model_with_a_sync_function():
    #
    def answer(req: ModelRequest) -> str:
        last = req.messages[-1]
        assert isinstance(last, UserMessage)
        return f"you said {last.text}"

    model = FunctionModel(answer)
    response = await model.request(request("ping"))
    assert response.message.text == "you said ping"
    assert response.model == "test:function"
    assert len(model.requests) == 1


async def test_function_model_with_an_async_function_returning_a_turn():
    #
    async def answer(req: ModelRequest) -> Turn:
        return Turn(tool_calls=[Call("lookup", {"n": len(req.messages)})])

    response = await FunctionModel(answer, name="fn").request(request())
    assert [(c.name, c.args()) for c in response.message.tool_calls] == [("lookup", {"n": 2})]
    assert response.model == "test:fn"


async def test_function_model_with_a_stream_function():
    #
    async def stream(req: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        yield "Hel"
        yield ReasoningChunk(text="hm")
        yield "lo"

    chunks = await collect(FunctionModel(stream_function=stream))
    assert chunks == [
        TextChunk(text="Hel"),
        ReasoningChunk(text="hm"),
        TextChunk(text="lo"),
        FinishChunk(finish_reason="stop", usage=Usage(requests=1)),
    ]


async def test_a_stream_function_that_finishes_itself_is_not_finished_twice():
    #
    async def stream(req: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        yield "cut"
        yield FinishChunk(finish_reason="length")

    chunks = await collect(FunctionModel(stream_function=stream))
    assert [c.type for c in chunks] == ["text", "finish"]
    response = await FunctionModel(stream_function=stream).request(request())
    assert response.finish_reason == "length"


def test_function_model_needs_exactly_one_of_function_or_stream_function():
    #
    async def stream(req: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        yield "x"

    with pytest.raises(UserError, match="exactly one of function or stream_function"):
        FunctionModel()
    with pytest.raises(UserError, match="exactly one of function or stream_function"):
        FunctionModel(lambda req: "x", stream_function=stream)


@pytest.mark.parametrize(
    ("script", "message"),
    [
        ([[Call("add", {"a": 1})]], r"turn 0 is list .*wrap tool calls as Turn\(tool_calls"),
        (["fine", 42], "turn 1 is int 42"),
        ("just text", "takes a list of turns"),
        ([Turn(tool_calls=Call("add"))], "turn 0: tool_calls must be a list of Call"),  # pyright: ignore[reportArgumentType]
        ([Turn(tool_calls=["add"])], "turn 0: tool_calls holds 'add'"),  # pyright: ignore[reportArgumentType]
        ([Turn(text=3)], "turn 0: text must be a string"),  # pyright: ignore[reportArgumentType]
        ([Turn(usage={"prompt_tokens": 1})], "turn 0: usage must be a Usage"),  # pyright: ignore[reportArgumentType]
        ([Turn(error=ValueError("x"))], "turn 0: error must be a ModelError"),  # pyright: ignore[reportArgumentType]
    ],
)
def test_a_malformed_script_is_refused_at_construction(script: object, message: str) -> None:
    with pytest.raises(UserError, match=message):
        ScriptedModel(script)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((3, {"a": 1}), "non-empty tool name"),
        (("add", [1, 2]), "args must be a dict or a JSON string"),
        (("add", {"when": object()}), "not JSON-serialisable"),
    ],
)
def test_a_malformed_call_is_refused(args: tuple[Any, Any], message: str) -> None:
    with pytest.raises(UserError, match=message):
        Call(*args)
