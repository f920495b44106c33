"""Whatever a history went through, each protocol's request body is one its vendor accepts.

Random histories (orphan calls and results, turns of one role in a row, reasoning from
several vendors, compaction summaries, late system messages) go through what the loop does
before each request (the transcript repair) and then each protocol's request builder. The
body is checked against that protocol's rules: no orphan tool call or result, results right
after their calls, the role order the protocol demands, reasoning only where it is accepted.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.context import SUMMARY_HEADER, repair_transcript
from bastion.core import (
    AssistantMessage,
    AssistantPart,
    Message,
    ModelRequest,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)
from bastion.providers import HttpModel

from ._wire import PROTOCOLS, wire_model

TOOL = ToolDefinition(name="look", description="Look.", parameters={"type": "object"})
IDS = ("c1", "c2", "c3")
Body = dict[str, Any]


def _text(text: str) -> AssistantPart:
    return TextPart(text=text)


def _user(text: str) -> Message:
    return UserMessage(content=text)


def _result(call_id: str, is_error: bool) -> Message:
    return ToolMessage(tool_call_id=call_id, tool_name="look", content="r", is_error=is_error)


def _joined(lead: list[SystemMessage], rest: list[Message]) -> list[Message]:
    return [*lead, *rest]


_reasoning = st.sampled_from(
    [
        ReasoningPart(text="signed thought", signature="sig-a"),  # Anthropic's kind
        ReasoningPart(redacted=True, provider_details={"data": "opaque"}),
        ReasoningPart(
            text="gemini thought", signature="sig-g", provider_details={"vendor": "gemini"}
        ),
        ReasoningPart(text="", provider_details={"id": "rs_1", "summary": []}),  # OpenAI's
        ReasoningPart(text="unsigned thought"),  # a server that sends reasoning as text
    ]
)
_parts = st.lists(
    st.one_of(_reasoning, st.builds(_text, st.sampled_from(["a", "b"]))),
    max_size=3,
)


def _assistant(parts: list[AssistantPart], ids: list[str]) -> AssistantMessage:
    calls = [ToolCall(id=i, name="look", arguments='{"q": 1}') for i in dict.fromkeys(ids)]
    return AssistantMessage(parts=parts, tool_calls=calls)


_message: st.SearchStrategy[Message] = st.one_of(
    st.builds(_user, st.sampled_from(["hi", "more", "why?"])),
    st.just(UserMessage(content=f"{SUMMARY_HEADER}Earlier: the user asked twice.")),
    st.just(SystemMessage(content="A late note.")),
    st.builds(_assistant, _parts, st.lists(st.sampled_from(IDS), max_size=3)),
    st.builds(_result, st.sampled_from(IDS), st.booleans()),
)
_histories = st.builds(
    _joined,
    st.lists(st.just(SystemMessage(content="You help.")), max_size=2),
    st.lists(_message, max_size=14),
)


def _chat(body: Body, *, reasoning_field: str | None, ids: bool) -> None:
    """Chat Completions and Ollama: results right after the call, each call answered."""
    open_calls: list[str] = []
    for message in body["messages"]:
        role = message["role"]
        if role == "tool":
            key = message["tool_call_id"] if ids else message["tool_name"]
            assert key in open_calls, f"orphan tool result {key}"
            open_calls.remove(key)
            continue
        assert not open_calls, f"calls {open_calls} not answered before a {role} message"
        if role == "assistant":
            calls: list[Body] = message.get("tool_calls") or []
            assert message.get("content") or calls or message.get(reasoning_field or "-")
            key = "id" if ids else "function"
            open_calls = [c[key] if ids else c[key]["name"] for c in calls]
            if reasoning_field is None:
                assert not {"reasoning_content", "reasoning", "thinking"} & set(message)
    assert not open_calls


def _responses(body: Body) -> None:
    open_calls: set[str] = set()
    items = body["input"]
    for index, item in enumerate(items):
        kind = item.get("type", "message")
        if kind == "function_call":
            open_calls.add(item["call_id"])
        elif kind == "function_call_output":
            assert item["call_id"] in open_calls, f"orphan output {item['call_id']}"
            open_calls.remove(item["call_id"])
        elif kind == "reasoning":
            assert item["id"].startswith("rs_")
            following: Body = items[index + 1] if index + 1 < len(items) else {}
            assert (
                following.get("type") in ("function_call", "reasoning")
                or following.get("role") == "assistant"
            ), "a reasoning item must lead to an output item"
        elif item.get("role") != "assistant":
            assert not open_calls, f"calls {open_calls} not answered before a {item['role']} item"
    assert not open_calls


def _anthropic(body: Body) -> None:
    messages = body["messages"]
    assert messages
    assert messages[0]["role"] == "user"
    asked: set[str] = set()
    for before, message in zip([None, *messages], messages, strict=False):
        assert before is None or before["role"] != message["role"], "roles must alternate"
        blocks = message["content"]
        assert blocks, "empty content"
        kinds = [b["type"] for b in blocks]
        if message["role"] == "assistant":
            asked = {b["id"] for b in blocks if b["type"] == "tool_use"}
            assert all(b.get("signature") for b in blocks if b["type"] == "thinking")
            continue
        assert not {"thinking", "redacted_thinking", "tool_use"} & set(kinds)
        answered = [b["tool_use_id"] for b in blocks if b["type"] == "tool_result"]
        assert sorted(answered) == sorted(asked), "each call answered in the next user turn"
        assert kinds[: len(answered)] == ["tool_result"] * len(answered), "results come first"
        asked = set()
    assert not asked


def _gemini(body: Body) -> None:
    contents = body["contents"]
    assert contents
    assert contents[0]["role"] == "user"
    called = 0
    for before, content in zip([None, *contents], contents, strict=False):
        assert before is None or before["role"] != content["role"], "roles must alternate"
        parts = content["parts"]
        assert parts, "empty parts"
        responses = sum("functionResponse" in p for p in parts)
        if content["role"] == "model":
            assert called == 0
            called = sum("functionCall" in p for p in parts)
            continue
        assert not any(p.get("thought") or "functionCall" in p for p in parts)
        assert responses == called, "each call answered in the next user turn"
        called = 0
    assert called == 0


CHECKS: dict[str, Callable[[Body], None]] = {
    "openai-chat": lambda b: _chat(b, reasoning_field=None, ids=True),
    "ollama": lambda b: _chat(b, reasoning_field="thinking", ids=False),
    "openai-responses": _responses,
    "anthropic": _anthropic,
    "gemini": _gemini,
}
MODELS: dict[str, HttpModel] = {protocol: wire_model(protocol)[0] for protocol in PROTOCOLS}


def _body(protocol: str, history: list[Message]) -> Body:
    """What the loop sends: the repaired history, serialised by ``protocol``'s adapter."""
    model = MODELS[protocol]
    request = ModelRequest(messages=history, tools=[TOOL])
    return model.protocol.payload(request, model.name, model.protocol.name_map(request))


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(_histories, st.sampled_from(PROTOCOLS))
def test_any_history_is_sent_as_a_valid_transcript_for_every_protocol(
    history: list[Message], protocol: str
) -> None:
    repaired = repair_transcript(history).messages
    if all(isinstance(m, SystemMessage) for m in repaired):
        return  # nothing but a system prompt: not a conversation
    CHECKS[protocol](_body(protocol, repaired))
