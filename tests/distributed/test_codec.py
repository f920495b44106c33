"""What crosses the workflow/activity boundary comes back as it went."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from bastion.core import (
    AssistantMessage,
    FinishChunk,
    Message,
    ModelRequest,
    ModelSettings,
    OutputSpec,
    ReasoningConfig,
    StreamChunk,
    SystemMessage,
    TextChunk,
    TextPart,
    ToolCall,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    ToolDefinition,
    ToolMessage,
    Usage,
    UserMessage,
)
from bastion.distributed._codec import (
    decode_chunks,
    decode_request,
    encode_chunks,
    encode_request,
)

_text = st.text(max_size=30)
_messages = st.one_of(
    st.builds(SystemMessage, content=_text),
    st.builds(UserMessage, content=_text),
    st.builds(
        AssistantMessage,
        parts=st.lists(st.builds(TextPart, text=_text), max_size=2),
        tool_calls=st.lists(st.builds(ToolCall, id=_text, name=_text, arguments=_text), max_size=2),
    ),
    st.builds(
        ToolMessage, tool_call_id=_text, tool_name=_text, content=_text, is_error=st.booleans()
    ),
)
_chunks = st.one_of(
    st.builds(TextChunk, text=_text),
    st.builds(ToolCallStartChunk, id=_text, name=_text),
    st.builds(ToolCallDeltaChunk, id=_text, arguments_delta=_text),
    st.builds(ToolCallEndChunk, id=_text),
    st.builds(
        FinishChunk,
        finish_reason=st.sampled_from(["stop", "tool_calls", "length"]),
        usage=st.builds(Usage, prompt_tokens=st.integers(0, 10**6), requests=st.integers(0, 3)),
    ),
)


@given(messages=st.lists(_messages, max_size=6), temperature=st.none() | st.floats(0, 2))
def test_a_model_request_round_trips(messages: list[Message], temperature: float | None) -> None:
    request = ModelRequest(
        messages=messages,
        tools=[ToolDefinition(name="add", description="Add.", parameters={"type": "object"})],
        output=OutputSpec(name="answer", json_schema={"type": "object"}),
        settings=ModelSettings(
            temperature=temperature, stop=("END",), reasoning=ReasoningConfig(effort="low")
        ),
    )
    back = decode_request(encode_request(request))
    assert list(back.messages) == messages
    assert (list(back.tools), back.output, back.settings) == (
        list(request.tools),
        request.output,
        request.settings,
    )


@given(chunks=st.lists(_chunks, max_size=8))
def test_a_streamed_answer_round_trips(chunks: list[StreamChunk]) -> None:
    assert decode_chunks(encode_chunks(chunks)) == chunks
