"""The model protocol: ``ResponseAssembler`` and ``Model.request`` draining ``stream``."""

import itertools
from collections.abc import AsyncGenerator

from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.core import (
    FinishChunk,
    Model,
    ModelRequest,
    ReasoningChunk,
    ReasoningPart,
    ResponseAssembler,
    StreamChunk,
    TextChunk,
    TextPart,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    Usage,
    UserMessage,
)


def assemble(*chunks: StreamChunk) -> ResponseAssembler:
    assembler = ResponseAssembler("test:m")
    for chunk in chunks:
        assembler.add(chunk)
    return assembler


@st.composite
def interleaved_calls(
    draw: st.DrawFn,
) -> tuple[list[StreamChunk], dict[str, str], list[str], set[str]]:
    """Several tool calls whose start/delta/end chunks interleave at random."""
    count = draw(st.integers(1, 4))
    ids = [f"call_{i}" for i in range(count)]
    deltas = {i: draw(st.lists(st.text(max_size=6), max_size=4)) for i in ids}
    unended = set(draw(st.lists(st.sampled_from(ids), max_size=2)))
    queues: dict[str, list[StreamChunk]] = {}
    for i in ids:
        queue: list[StreamChunk] = [ToolCallStartChunk(id=i, name=f"tool_{i}")]
        queue += [ToolCallDeltaChunk(id=i, arguments_delta=d) for d in deltas[i]]
        if i not in unended:
            queue.append(ToolCallEndChunk(id=i))
        queues[i] = queue
    stream: list[StreamChunk] = []
    start_order: list[str] = []
    while any(queues.values()):
        i = draw(st.sampled_from(sorted(k for k, q in queues.items() if q)))
        chunk = queues[i].pop(0)
        if isinstance(chunk, ToolCallStartChunk):
            start_order.append(i)
        stream.append(chunk)
    return stream, {i: "".join(d) for i, d in deltas.items()}, start_order, unended


@settings(max_examples=200, deadline=None)
@given(interleaved_calls())
def test_interleaved_tool_calls_assemble_each_calls_arguments_exactly(
    case: tuple[list[StreamChunk], dict[str, str], list[str], set[str]],
):
    #
    stream, arguments, start_order, unended = case
    response = assemble(*stream).response()

    complete = [i for i in start_order if i not in unended]
    assert [c.id for c in response.message.tool_calls] == complete
    for call in response.message.tool_calls:
        expected = arguments[call.id]
        assert call.arguments == (expected if expected.strip() else "{}")
        assert call.name == f"tool_{call.id}"
    assert [c.id for c in response.incomplete_tool_calls] == [
        i for i in start_order if i in unended
    ]
    for call in response.incomplete_tool_calls:
        assert call.arguments == arguments[call.id]
    assert response.finish_reason == ("tool_calls" if complete else "stop")


def test_consecutive_text_and_reasoning_chunks_merge_into_parts():
    #
    response = assemble(
        ReasoningChunk(text="Let me "),
        ReasoningChunk(text="think."),
        TextChunk(text="Hello, "),
        TextChunk(text="world"),
        ReasoningChunk(text="More."),
        TextChunk(text="!"),
        FinishChunk(finish_reason="stop"),
    ).response()
    assert response.message.parts == [
        ReasoningPart(text="Let me think."),
        TextPart(text="Hello, world"),
        ReasoningPart(text="More."),
        TextPart(text="!"),
    ]
    assert response.message.text == "Hello, world!"
    assert response.message.reasoning == "Let me think.More."


def test_signature_and_provider_details_attach_to_the_reasoning_block():
    # covers G-63, A-11
    response = assemble(
        ReasoningChunk(text="step 1", provider_details={"a": 1}),
        ReasoningChunk(text="", signature="sig-1", provider_details={"b": 2}),
        ReasoningChunk(text="second block"),
        ReasoningChunk(signature="sig-2"),
    ).response()
    assert response.message.parts == [
        ReasoningPart(text="step 1", signature="sig-1", provider_details={"a": 1, "b": 2}),
        ReasoningPart(text="second block", signature="sig-2"),
    ]


def test_tool_calls_without_a_finish_chunk_infer_tool_calls():
    # covers A-10, C3
    response = assemble(
        TextChunk(text="Let me check."),
        ToolCallStartChunk(id="c1", name="weather"),
        ToolCallDeltaChunk(id="c1", arguments_delta='{"city": '),
        ToolCallDeltaChunk(id="c1", arguments_delta='"Oslo"}'),
        ToolCallEndChunk(id="c1", provider_details={"item_id": "fc_1"}),
    ).response()
    assert response.finish_reason == "tool_calls"
    (call,) = response.message.tool_calls
    assert (call.id, call.name, call.args()) == ("c1", "weather", {"city": "Oslo"})
    assert call.provider_details == {"item_id": "fc_1"}
    assert response.message.text == "Let me check."


def test_an_explicit_finish_reason_other_than_stop_is_kept():
    #
    response = assemble(
        ToolCallStartChunk(id="c1", name="t"),
        ToolCallEndChunk(id="c1"),
        FinishChunk(finish_reason="length"),
    ).response()
    assert response.finish_reason == "length"
    assert response.message.tool_calls[0].arguments == "{}"


def test_a_call_left_open_is_reported_incomplete_and_not_run():
    #
    response = assemble(
        ToolCallStartChunk(id="c1", name="t"),
        ToolCallDeltaChunk(id="c1", arguments_delta='{"x": 1'),
        FinishChunk(finish_reason="stop"),
    ).response()
    assert response.message.tool_calls == []
    (incomplete,) = response.incomplete_tool_calls
    assert (incomplete.id, incomplete.arguments) == ("c1", '{"x": 1')
    assert response.finish_reason == "stop"


def test_deltas_for_an_unknown_call_are_ignored():
    #
    assembler = assemble(
        ToolCallDeltaChunk(id="ghost", arguments_delta="{}"),
        ToolCallEndChunk(id="ghost"),
        ToolCallStartChunk(id="c1", name="t"),
        ToolCallDeltaChunk(id="c1", arguments_delta='{"a": 1}'),
    )
    assert assembler.arguments_of("c1") == '{"a": 1}'
    assert assembler.arguments_of("ghost") == ""
    response = assembler.response()
    assert response.message.tool_calls == []
    assert [c.id for c in response.incomplete_tool_calls] == ["c1"]


def test_usage_and_finish_details_come_from_the_finish_chunk():
    #
    response = assemble(
        TextChunk(text="hi"),
        FinishChunk(
            finish_reason="stop",
            usage=Usage(prompt_tokens=5, completion_tokens=1),
            provider_details={"id": "resp_9"},
        ),
    ).response()
    assert response.usage == Usage(prompt_tokens=5, completion_tokens=1, requests=1)
    assert response.message.provider_details == {"id": "resp_9"}
    assert response.message.model == "test:m"
    assert response.model == "test:m"


def test_reported_request_counts_are_not_inflated():
    #
    response = assemble(FinishChunk(finish_reason="stop", usage=Usage(requests=3))).response()
    assert response.usage.requests == 3


def test_an_empty_stream_is_an_empty_stop_answer_counted_as_one_request():
    #
    response = assemble().response()
    assert response.message.parts == []
    assert response.finish_reason == "stop"
    assert response.usage.requests == 1


class _TwoChunks(Model):
    provider = "unit"
    name = "two"

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        yield TextChunk(text="a")
        yield TextChunk(text="b")
        yield FinishChunk(finish_reason="stop", usage=Usage(prompt_tokens=1, requests=1))


async def test_request_drains_stream_into_one_response():
    #
    model = _TwoChunks()
    response = await model.request(ModelRequest(messages=[UserMessage(content="x")]))
    assert response.message.text == "ab"
    assert response.model == "unit:two"
    assert response.usage.requests == 1
    assert model.key == "unit:two"
    assert repr(model) == "_TwoChunks('unit:two')"


def _pieces(draw: st.DrawFn, text: str) -> list[str]:
    """``text`` cut at random places (empty pieces included: servers send them)."""
    cuts = sorted(draw(st.lists(st.integers(0, len(text)), max_size=6)))
    bounds = [0, *cuts, len(text)]
    return [text[a:b] for a, b in itertools.pairwise(bounds)]


Segment = tuple[str, str, str | None]  # (kind, text, signature)


@st.composite
def responses(draw: st.DrawFn) -> tuple[list[Segment], list[tuple[str, str]]]:
    """A response: alternating text and reasoning segments, then tool calls (id → args)."""
    kinds = draw(st.lists(st.sampled_from(["text", "reasoning"]), max_size=4))
    segments: list[Segment] = []
    for kind in kinds:
        if segments and segments[-1][0] == kind:
            continue  # adjacent segments of one kind are one part: keep them apart
        text = draw(st.text(min_size=1, max_size=12))
        signature = (
            draw(st.none() | st.text(min_size=1, max_size=8)) if kind == "reasoning" else None
        )
        segments.append((kind, text, signature))
    count = draw(st.integers(0, 3))
    calls = [(f"call_{i}", draw(st.text(max_size=20))) for i in range(count)]
    return segments, calls


@st.composite
def chunkings(draw: st.DrawFn) -> tuple[list[StreamChunk], list[StreamChunk]]:
    """One response as its fewest chunks, and as a random chunking of the same content."""
    segments, calls = draw(responses())
    usage = Usage(prompt_tokens=draw(st.integers(1, 99)), completion_tokens=3, requests=1)
    whole: list[StreamChunk] = []
    split: list[StreamChunk] = []
    for kind, text, signature in segments:
        if kind == "text":
            whole.append(TextChunk(text=text))
            split += [TextChunk(text=p) for p in _pieces(draw, text)]
        else:
            whole.append(ReasoningChunk(text=text, signature=signature))
            split += [ReasoningChunk(text=p) for p in _pieces(draw, text)]
            if signature is not None:  # the signature comes last, on an empty chunk
                split.append(ReasoningChunk(signature=signature))
    queues: dict[str, list[StreamChunk]] = {}
    for call_id, arguments in calls:
        whole += [
            ToolCallStartChunk(id=call_id, name="t"),
            ToolCallDeltaChunk(id=call_id, arguments_delta=arguments),
            ToolCallEndChunk(id=call_id),
        ]
        queues[call_id] = [
            ToolCallStartChunk(id=call_id, name="t"),
            *(ToolCallDeltaChunk(id=call_id, arguments_delta=p) for p in _pieces(draw, arguments)),
            ToolCallEndChunk(id=call_id),
        ]
    while any(queues.values()):  # calls interleave, each in its own order
        ready = [k for k, q in queues.items() if q]
        call_id = draw(st.sampled_from(ready))
        if queues[call_id][0].type == "tool_call_start":  # starts keep the calls' order
            call_id = next(k for k in ready if k <= call_id and queues[k])
        split.append(queues[call_id].pop(0))
    for _ in range(draw(st.integers(0, 3))):  # empty deltas anywhere, as servers send them
        empty = draw(st.sampled_from([TextChunk(text=""), ReasoningChunk()]))
        split.insert(draw(st.integers(0, len(split))), empty)
    finish = FinishChunk(finish_reason="stop", usage=usage)
    return [*whole, finish], [*split, finish]


@settings(max_examples=300, deadline=None)
@given(chunkings())
def test_any_chunking_assembles_the_same_response(
    case: tuple[list[StreamChunk], list[StreamChunk]],
):
    # covers issue 12 (any chunking of a response assembles the same ModelResponse)
    whole, split = case
    expected = assemble(*whole).response()
    assert assemble(*split).response() == expected
