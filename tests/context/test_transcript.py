"""Transcripts a provider accepts, whatever the history went through."""

from collections.abc import Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion.context import (
    MISSING_RESULT,
    PROTOCOL_RULES,
    Repair,
    TranscriptError,
    TranscriptGuard,
    TranscriptRules,
    repair_transcript,
)
from bastion.core import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserMessage,
)


def call(id_: str) -> ToolCall:
    return ToolCall(id=id_, name="t", arguments="{}")


def asks(*ids: str, text: str = "") -> AssistantMessage:
    return AssistantMessage(
        parts=[TextPart(text=text)] if text else [], tool_calls=[call(i) for i in ids]
    )


def result(id_: str, content: str = "ok") -> ToolMessage:
    return ToolMessage(tool_call_id=id_, tool_name="t", content=content)


def user(text: str = "hi") -> UserMessage:
    return UserMessage(content=text)


def answer(text: str = "done") -> AssistantMessage:
    return AssistantMessage(parts=[TextPart(text=text)])


def test_a_valid_history_comes_back_unchanged():
    history: list[Message] = [
        SystemMessage(content="s"),
        user(),
        asks("a", "b"),
        result("a"),
        result("b"),
        answer(),
    ]
    repaired = repair_transcript(history)
    assert repaired.messages == history
    assert repaired.repairs == ()


def test_a_call_cut_off_by_a_crash_gets_an_error_result():
    repaired = repair_transcript([user(), asks("a", "b"), result("a")])
    assert repaired.messages[-1] == ToolMessage(
        tool_call_id="b", tool_name="t", content=MISSING_RESULT, is_error=True
    )
    assert repaired.repairs == (Repair(kind="missing_result_added", tool_call_id="b"),)


def test_orphan_and_duplicate_results_are_dropped():
    history: list[Message] = [user(), result("ghost"), asks("a"), result("a"), result("a", "again")]
    repaired = repair_transcript(history)
    assert repaired.messages == [user(), asks("a"), result("a")]
    assert [(r.kind, r.tool_call_id, r.index) for r in repaired.repairs] == [
        ("orphan_result_dropped", "ghost", 1),
        ("duplicate_result_dropped", "a", 4),
    ]


def test_a_user_turn_between_a_call_and_its_result_moves_after_the_result():
    steer = user("also check Rome")
    repaired = repair_transcript([user(), asks("a"), steer, result("a"), answer()])
    assert repaired.messages == [user(), asks("a"), result("a"), steer, answer()]
    assert [r.kind for r in repaired.repairs] == ["result_moved"]


def test_an_empty_assistant_turn_is_dropped():
    repaired = repair_transcript([user(), AssistantMessage(), user("again")])
    assert repaired.messages == [user(), user("again")]
    assert [r.kind for r in repaired.repairs] == ["empty_assistant_dropped"]


def test_protocols_that_need_a_user_turn_first_get_one_after_the_system_prompt():
    history: list[Message] = [SystemMessage(content="s"), answer("earlier"), user()]
    assert repair_transcript(history, PROTOCOL_RULES["openai-chat"]).repairs == ()
    repaired = repair_transcript(history, PROTOCOL_RULES["anthropic"])
    assert isinstance(repaired.messages[1], UserMessage)
    assert repaired.messages[0] == SystemMessage(content="s")
    assert repaired.messages[2:] == history[1:]


def test_two_calls_of_one_answer_sharing_an_id_cannot_be_repaired():
    with pytest.raises(TranscriptError, match="share the id 'a' \\(message 3\\)"):
        repair_transcript([user(), asks("a"), result("a"), asks("a", "a")])


def test_an_id_reused_in_a_later_answer_is_matched_to_the_answer_before_its_result():
    history: list[Message] = [user(), asks("a"), result("a", "1"), asks("a"), result("a", "2")]
    repaired = repair_transcript(history)
    assert repaired.messages == history
    assert repaired.repairs == ()


# -- property: any history, any protocol --------------------------------------------------

_IDS = ("a", "b", "c", "d", "e", "f")


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Random histories; an answer's call ids are unique, later answers may reuse them."""
    out: list[Message] = [SystemMessage(content="s")] if draw(st.booleans()) else []
    kinds = st.sampled_from(["user", "text", "calls", "result", "empty"])
    for kind in draw(st.lists(kinds, max_size=14)):
        if kind == "user":
            out.append(user())
        elif kind == "text":
            out.append(answer())
        elif kind == "empty":
            out.append(AssistantMessage())
        elif kind == "calls":
            ids = draw(st.lists(st.sampled_from(_IDS), min_size=1, max_size=3, unique=True))
            out.append(asks(*ids))
        else:
            out.append(result(draw(st.sampled_from(_IDS))))
    return out


def _is_valid(messages: Sequence[Message], rules: TranscriptRules) -> bool:
    open_calls: set[str] = set()
    answered: set[str] = set()
    for message in messages:
        if isinstance(message, ToolMessage):
            if message.tool_call_id not in open_calls:
                return False
            open_calls.discard(message.tool_call_id)
            answered.add(message.tool_call_id)
            continue
        if open_calls:  # anything else before every call is answered
            return False
        if isinstance(message, AssistantMessage):
            if not message.parts and not message.tool_calls:
                return False
            open_calls = {c.id for c in message.tool_calls}
    if open_calls:
        return False
    if rules.first_turn_user:
        rest = [m for m in messages if not isinstance(m, SystemMessage)]
        if rest and not isinstance(rest[0], UserMessage):
            return False
    return True


@settings(max_examples=300, deadline=None)
@given(histories(), st.sampled_from(sorted(PROTOCOL_RULES)))
def test_any_history_is_repaired_into_a_valid_one_and_repair_is_idempotent(
    history: list[Message], protocol: str
):
    rules = PROTOCOL_RULES[protocol]
    repaired = repair_transcript(history, rules)
    assert _is_valid(repaired.messages, rules)
    assert repair_transcript(repaired.messages, rules).repairs == ()
    # Nothing the user or the model said is lost, and the order of what they said holds.
    said = [
        id(m)
        for m in history
        if isinstance(m, UserMessage)
        or (isinstance(m, AssistantMessage) and (m.parts or m.tool_calls))
    ]
    out = [id(m) for m in repaired.messages if id(m) in set(said)]
    assert out == said


@settings(max_examples=200, deadline=None)
@given(st.lists(histories(), min_size=1, max_size=4), st.sampled_from(sorted(PROTOCOL_RULES)))
def test_the_guard_checks_growing_and_changed_histories_as_a_full_repair_would(
    pieces: list[list[Message]], protocol: str
):
    rules = PROTOCOL_RULES[protocol]
    guard = TranscriptGuard(rules)
    history: list[Message] = []
    for piece in pieces:
        history = [*history, *piece]  # a step adds messages (the same objects before them)
        for end in range(len(history) + 1):
            try:
                expected = repair_transcript(history[:end], rules)
            except TranscriptError:
                with pytest.raises(TranscriptError):
                    guard.check(history[:end])
                continue
            assert guard.check(history[:end]) == expected
    if history:  # a history changed in the middle is checked again in full
        changed = [*history[:-1], user("edited"), *history[-1:]]
        try:
            expected = repair_transcript(changed, rules)
        except TranscriptError:
            return
        assert guard.check(changed) == expected


def test_the_guard_only_checks_what_a_step_added():
    guard = TranscriptGuard()
    history: list[Message] = [user(), asks("a"), result("a"), answer()]
    guard.check(history)
    visited: list[int] = []

    class Visited(list[Message]):
        """A history that records which messages were looked at one by one."""

        def __getitem__(self, index: Any) -> Any:
            if isinstance(index, int):
                visited.append(index)
            return super().__getitem__(index)

    grown = Visited([*history, user("next"), answer("again")])
    assert guard.check(grown).repairs == ()
    assert visited == [4, 5]
