"""JSON round-trips of every protocol type through the ``bastion.core`` serde functions."""

import base64
import dataclasses
import inspect
import json
import types
from typing import Any, Literal, Union, get_args, get_origin, get_type_hints

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from pydantic import ValidationError

import bastion.core._events as events_module
from bastion.core import (
    AgentEndEvent,
    AgentEvent,
    AssistantMessage,
    AssistantPart,
    AudioPart,
    FilePart,
    FinishChunk,
    ImagePart,
    Message,
    ReasoningChunk,
    ReasoningPart,
    RunErrorInfo,
    StepEndEvent,
    StreamChunk,
    SystemMessage,
    TextChunk,
    TextPart,
    ToolApprovalRequestedEvent,
    ToolCall,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolMessage,
    Usage,
    UserMessage,
    UserPart,
    dump_event,
    dump_messages,
    load_event,
    load_messages,
    message_adapter,
    part_adapter,
    stream_chunk_adapter,
    usage_adapter,
)

# -- strategies derived from the dataclasses' own type hints, so new fields are covered too --

json_scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=12)
)
json_values: st.SearchStrategy[Any] = st.recursive(
    json_scalars,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=6), children, max_size=3)
    ),
    max_leaves=8,
)


_unions_in_progress: dict[Any, st.SearchStrategy[Any] | None] = {}


def _built(hint: Any) -> st.SearchStrategy[Any]:
    built = _unions_in_progress[hint]
    assert built is not None  # deferred strategies are drawn from after the build
    return built


def strategy_for(hint: Any) -> st.SearchStrategy[Any]:
    """Return a strategy producing values of a protocol field's type."""
    origin = get_origin(hint)
    args = get_args(hint)
    if hint is Any:
        return json_values
    if origin is Literal:
        return st.sampled_from(args)
    if origin in (Union, types.UnionType):
        if hint in _unions_in_progress:  # a recursive type (subagent.event wraps an event)
            return st.deferred(lambda: _built(hint))
        _unions_in_progress[hint] = None
        built = st.one_of(*(strategy_for(a) for a in args))
        _unions_in_progress[hint] = built
        return built
    if origin is list:
        return st.lists(strategy_for(args[0]), max_size=3)
    if origin is tuple and len(args) == 2 and args[1] is Ellipsis:
        return st.lists(strategy_for(args[0]), max_size=3).map(tuple)
    if origin is dict:
        return st.dictionaries(st.text(max_size=8), strategy_for(args[1]), max_size=3)
    if hint is type(None):
        return st.none()
    if hint is bool:
        return st.booleans()
    if hint is int:
        return st.integers()
    if hint is float:
        return st.floats(allow_nan=False, allow_infinity=False)
    if hint is str:
        return st.text(max_size=20)
    if hint is bytes:
        return st.binary(max_size=40)
    if dataclasses.is_dataclass(hint) and isinstance(hint, type):
        hints = get_type_hints(hint)
        kwargs = {f.name: strategy_for(hints[f.name]) for f in dataclasses.fields(hint) if f.init}
        return st.builds(hint, **kwargs)
    raise TypeError(f"no strategy for {hint!r}")


messages: st.SearchStrategy[Message] = strategy_for(Message)
events: st.SearchStrategy[AgentEvent] = strategy_for(AgentEvent)
parts: st.SearchStrategy[UserPart | AssistantPart] = strategy_for(UserPart | AssistantPart)
chunks: st.SearchStrategy[StreamChunk] = strategy_for(StreamChunk)


def event_classes() -> list[type[Any]]:
    return [
        cls
        for name, cls in inspect.getmembers(events_module, inspect.isclass)
        if name.endswith("Event") and cls.__module__ == events_module.__name__
    ]


# -- property tests --


@settings(max_examples=150, deadline=None)
@given(st.lists(messages, max_size=4))
def test_any_conversation_round_trips_through_json(conversation: list[Message]):
    #
    data = dump_messages(conversation)
    assert load_messages(data) == conversation
    assert dump_messages(load_messages(data)) == data


@settings(max_examples=150, deadline=None)
@given(events)
def test_any_event_round_trips_through_json(event: AgentEvent):
    # covers G-13, G-14
    data = dump_event(event)
    loaded = load_event(data)
    assert loaded == event
    assert type(loaded) is type(event)
    assert dump_event(loaded) == data


@settings(max_examples=100, deadline=None)
@given(parts)
def test_any_part_round_trips_through_json(part: UserPart | AssistantPart):
    #
    adapter = part_adapter()
    assert adapter.validate_json(adapter.dump_json(part)) == part


@settings(max_examples=100, deadline=None)
@given(chunks)
def test_any_stream_chunk_round_trips_through_json(chunk: StreamChunk):
    #
    adapter = stream_chunk_adapter()
    assert adapter.validate_json(adapter.dump_json(chunk)) == chunk


def test_the_event_strategy_reaches_every_event_class():
    # Guards the property test above: a union member it cannot build would go untested.
    # covers G-13
    union_members = set(get_args(AgentEvent))
    assert union_members == set(event_classes())


# -- explicit examples --


def test_every_message_role_round_trips():
    #
    conversation: list[Message] = [
        SystemMessage(content="Be brief."),
        UserMessage(content="hi", name="ann"),
        UserMessage(
            content=[
                TextPart(text="what is this?"),
                ImagePart(url="https://x.test/cat.png", media_type="image/png"),
            ]
        ),
        AssistantMessage(
            parts=[ReasoningPart(text="look", signature="sig"), TextPart(text="A cat.")],
            tool_calls=[ToolCall(id="c1", name="zoom", arguments='{"x": 1}')],
            model="test:scripted",
            provider_details={"response_id": "resp_1"},
        ),
        AssistantMessage(tool_calls=[ToolCall(id="c2", name="zoom")]),
        ToolMessage(tool_call_id="c1", tool_name="zoom", content="zoomed", is_error=False),
        ToolMessage(
            tool_call_id="c2", tool_name="zoom", content=[TextPart(text="bad")], is_error=True
        ),
    ]
    data = dump_messages(conversation)
    assert load_messages(data) == conversation
    roles = [m["role"] for m in json.loads(data)]
    assert roles == ["system", "user", "user", "assistant", "assistant", "tool", "tool"]


def test_one_message_round_trips_through_the_message_adapter():
    #
    message = ToolMessage(tool_call_id="c1", tool_name="t", content="ok")
    adapter = message_adapter()
    assert adapter.validate_json(adapter.dump_json(message)) == message


def test_inline_bytes_are_standard_base64_in_json_and_come_back_exact():
    #
    payload = bytes(range(256))
    for part in (
        ImagePart.from_bytes(payload, "image/png"),
        AudioPart.from_bytes(payload, "audio/wav"),
        FilePart.from_bytes(payload, "application/pdf", filename="a.pdf"),
    ):
        raw = part_adapter().dump_json(part)
        encoded = json.loads(raw)["data"]
        assert encoded == base64.b64encode(payload).decode()  # the standard alphabet
        loaded = part_adapter().validate_json(raw)
        assert loaded == part
        assert isinstance(loaded, type(part))
        assert loaded.to_bytes() == payload


def test_standard_base64_from_other_clients_is_accepted():
    #
    payload = bytes([0xFB, 0xFF, 0xFE, 0x3E, 0x3F])
    raw = json.dumps({"type": "image", "data": base64.b64encode(payload).decode()})
    loaded = part_adapter().validate_json(raw)
    assert isinstance(loaded, ImagePart)
    assert loaded.to_bytes() == payload


def test_reasoning_signature_and_provider_details_are_kept_byte_exact():
    # covers G-63, A-08
    details: dict[str, Any] = {
        "encrypted_content": "gAAAAB" + "x/+=" * 50,
        "nested": {"ids": [1, 2, 3], "flag": None, "ratio": 0.1, "big": 2**80},
        "unicode": "é\u2028\x00",
    }
    part = ReasoningPart(
        text="", signature="EqQBCkYIARgC\n+/=", redacted=True, provider_details=details
    )
    raw = part_adapter().dump_json(part)
    loaded = part_adapter().validate_json(raw)
    assert isinstance(loaded, ReasoningPart)
    assert loaded.signature == part.signature
    assert loaded.provider_details == details
    assert part_adapter().dump_json(loaded) == raw

    message = AssistantMessage(parts=[part], provider_details=details)
    assert load_messages(dump_messages([message])) == [message]


def test_events_are_discriminated_by_their_dotted_type():
    # covers G-13, G-14
    end = AgentEndEvent(
        run_id="r",
        seq=9,
        status="failed",
        output={"answer": [1, 2]},
        usage=Usage(prompt_tokens=3, completion_tokens=4, cost_usd=0.5),
        error=RunErrorInfo(code="max_steps", message="too many steps"),
    )
    data = json.loads(dump_event(end))
    assert data["type"] == "agent.end"
    assert load_event(json.dumps(data)) == end

    step = StepEndEvent(
        run_id="r", seq=1, step=1, model="m", finish_reason="tool_calls", usage=Usage()
    )
    approval = ToolApprovalRequestedEvent(
        run_id="r",
        seq=2,
        tool_call_id="c",
        tool_name="t",
        arguments="{}",
        classification={"side_effect_class": "pure"},
    )
    for event in (step, approval):
        assert load_event(dump_event(event)) == event


def test_every_stream_chunk_kind_round_trips():
    #
    all_chunks: list[StreamChunk] = [
        TextChunk(text="hi"),
        ReasoningChunk(text="hm", signature="s", provider_details={"k": 1}),
        ToolCallStartChunk(id="c", name="t"),
        ToolCallDeltaChunk(id="c", arguments_delta='{"a"'),
        ToolCallEndChunk(id="c", provider_details={"k": [1]}),
        FinishChunk(finish_reason="length", usage=Usage(prompt_tokens=1), provider_details={}),
    ]
    adapter = stream_chunk_adapter()
    for chunk in all_chunks:
        assert adapter.validate_json(adapter.dump_json(chunk)) == chunk


def test_usage_round_trips_with_raw_provider_metrics():
    # covers A-12, C2
    usage = Usage(
        prompt_tokens=10,
        completion_tokens=5,
        reasoning_tokens=2,
        cached_read_tokens=4,
        cache_write_tokens=1,
        audio_input_tokens=7,
        audio_output_tokens=8,
        requests=2,
        cost_usd=0.0125,
        provider_metrics={"raw": {"prompt_tokens_details": {"cached_tokens": 4}}},
    )
    adapter = usage_adapter()
    assert adapter.validate_json(adapter.dump_json(usage)) == usage


def test_unknown_event_type_is_rejected():
    # covers G-13
    with pytest.raises(ValidationError, match=r"agent\.nope"):
        load_event('{"type": "agent.nope", "run_id": "r", "seq": 1}')
