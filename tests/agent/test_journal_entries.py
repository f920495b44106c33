"""Typed journal entries: each kind survives a store round trip, and older rows still load."""

from __future__ import annotations

import pytest

from bastion.agent._entries import (
    CompactionEntry,
    DecidedApproval,
    DecidedInterrupt,
    HandoffEntry,
    InterruptDecidedEntry,
    InterruptRaisedEntry,
    JournalRecord,
    ModelResponseEntry,
    PendingCall,
    RunEndedEntry,
    RunStartedEntry,
    Spent,
    ToolCallStartedEntry,
    ToolResultEntry,
    entry_payload,
    read_entry,
)
from bastion.core import AssistantMessage, TextPart, ToolCall, Usage, UserMessage
from bastion.stores import NewEntry, open_store

_STATE = {"run_id": "r1", "agent_name": "a", "session_id": "s1"}
_USAGE = Usage(prompt_tokens=3, completion_tokens=2, requests=1, cost_usd=0.5)
_ANSWER = AssistantMessage(
    parts=[TextPart(text="Let me look.")],
    tool_calls=[ToolCall(id="c1", name="lookup", arguments='{"q": "x"}')],
)

ENTRIES: list[JournalRecord] = [
    RunStartedEntry(event_seq=1, state=_STATE),
    ModelResponseEntry(
        event_seq=5,
        step=1,
        model="test:m",
        message=_ANSWER,
        usage=_USAGE,
        finish_reason="tool_calls",
        inserted=[UserMessage(content="also this")],
    ),
    ToolCallStartedEntry(
        event_seq=6,
        step=1,
        tool_call_id="c1",
        tool_name="lookup",
        arguments='{"q": "x"}',
        side_effect_class="read_only",
        idempotency_key="k-1",
    ),
    ToolResultEntry(
        event_seq=7,
        step=1,
        tool_call_id="c1",
        tool_name="lookup",
        arguments='{"q": "x"}',
        content="found",
        is_error=False,
        duration=0.25,
        untrusted=True,
        promote=["get_weather"],
        spent=[Spent(model="test:child", usage=_USAGE)],
        edited=True,
    ),
    CompactionEntry(
        event_seq=8,
        messages=[UserMessage(content="summary"), _ANSWER],
        spent=[Spent(model="test:summary", usage=_USAGE)],
    ),
    HandoffEntry(
        event_seq=8,
        from_agent="triage",
        to_agent="billing",
        tool_call_id="h1",
        step=2,
        messages=[UserMessage(content="refund please")],
        input_filter={"kind": "compose", "filters": [{"kind": "strip_reasoning"}]},
        spent=[Spent(model="test:summary", usage=_USAGE)],
    ),
    InterruptRaisedEntry(
        event_seq=9,
        state=_STATE,
        pending=[PendingCall(tool_call_id="c2", tool_name="send", reason="needs a human")],
        interrupts=["i1"],
    ),
    InterruptDecidedEntry(
        event_seq=10,
        approvals=[
            DecidedApproval(
                tool_call_id="c2", granted=True, arguments={"to": "ann"}, digest="d" * 64
            )
        ],
        interrupts=[DecidedInterrupt(interrupt_id="i1", decision={"type": "retry"})],
    ),
    RunEndedEntry(event_seq=11, state=_STATE),
]


@pytest.mark.parametrize("entry", ENTRIES, ids=lambda e: e.kind)
async def test_each_entry_kind_round_trips_through_a_store(entry: JournalRecord) -> None:
    async with open_store("memory://") as stores:
        stored = NewEntry(kind=entry.kind, payload=entry_payload(entry))
        await stores.journal.append("r1", [stored], expected_seq=0, agent="a")
        [row] = await stores.journal.read("r1")
    assert "kind" not in row.payload  # the store keeps the kind beside the payload
    assert read_entry(row.kind, row.payload) == entry


def test_a_tool_result_written_before_spent_keeps_its_usage() -> None:
    older = {
        "event_seq": 7,
        "step": 1,
        "tool_call_id": "c1",
        "tool_name": "lookup",
        "arguments": "{}",
        "content": "found",
        "is_error": False,
        "error_kind": None,
        "duration": 0.1,
        "untrusted": False,
        "summary_usage": {"requests": 1, "prompt_tokens": 4},
        "summary_model": "test:summary",
        "nested_usage": {"test:child": {"requests": 2}},
    }
    entry = read_entry("tool_result", older)
    assert isinstance(entry, ToolResultEntry)
    assert [(s.model, s.usage.requests) for s in entry.all_spent()] == [
        ("test:summary", 1),
        ("test:child", 2),
    ]
    # Written again, it takes the current form: one ``spent`` list, nothing lost.
    payload = entry_payload(entry)
    assert "nested_usage" not in payload
    assert "summary_usage" not in payload
    again = read_entry("tool_result", payload)
    assert isinstance(again, ToolResultEntry)
    assert again.all_spent() == entry.all_spent()


def test_an_entry_that_does_not_fit_its_kind_is_refused() -> None:
    with pytest.raises(ValueError, match="tool_call_id"):
        read_entry("tool_result", {"event_seq": 1, "step": 1, "content": "x"})
