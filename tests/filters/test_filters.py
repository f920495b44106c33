"""The handoff filter library: what each filter keeps, its descriptor, and JSON round-trips."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from bastion import filters
from bastion.context import SUMMARY_HEADER
from bastion.core import (
    AssistantMessage,
    Message,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
    dump_messages,
)
from bastion.security import Provenance

SYSTEM = SystemMessage(content="Be helpful.")


def _answer(text: str, *, calls: Sequence[ToolCall] = (), reasoning: str = "") -> AssistantMessage:
    parts: list[TextPart | ReasoningPart] = []
    if reasoning:
        parts.append(ReasoningPart(text=reasoning, signature="sig"))
    if text:
        parts.append(TextPart(text=text))
    return AssistantMessage(parts=list(parts), tool_calls=list(calls))


def _conversation() -> list[Message]:
    call = ToolCall(id="c1", name="lookup", arguments='{"q": "x"}')
    secret = ToolCall(id="c2", name="vault", arguments="{}")
    return [
        SYSTEM,
        UserMessage(content="first question"),
        _answer("Looking.", calls=[call, secret], reasoning="I should look it up."),
        ToolMessage(tool_call_id="c1", tool_name="lookup", content="42"),
        ToolMessage(tool_call_id="c2", tool_name="vault", content="hunter2", sensitivity="secret"),
        _answer("It is 42.", reasoning="done"),
        UserMessage(content="second question"),
        _answer("Sure."),
    ]


async def test_last_n_keeps_system_messages_and_the_last_n_others() -> None:
    # covers G-58
    messages = _conversation()
    kept = await filters.apply_filter(filters.last_n(2), messages)
    assert kept == [SYSTEM, UserMessage(content="second question"), _answer("Sure.")]
    assert messages == _conversation()  # the input is not changed


@pytest.mark.parametrize("n", [0, -1, 1.5, True, "2"])
def test_last_n_refuses_a_count_below_one(n: object) -> None:
    # covers G-58
    with pytest.raises(UserError, match="n >= 1"):
        filters.last_n(n)  # pyright: ignore[reportArgumentType]


def test_compose_always_ends_with_strip_reasoning_once() -> None:
    # covers G-64
    composed = filters.compose(filters.last_n(3), filters.strip_tool_calls())
    assert composed.filters == (
        filters.last_n(3),
        filters.strip_tool_calls(),
        filters.strip_reasoning(),
    )
    again = filters.compose(composed, filters.strip_reasoning())
    assert again == composed  # flattened, not doubled
    assert filters.compose().filters == (filters.strip_reasoning(),)


def test_compose_refuses_what_is_not_a_filter() -> None:
    with pytest.raises(UserError, match="filter descriptors"):
        filters.compose(print)  # pyright: ignore[reportArgumentType]


async def test_strip_tool_calls_removes_results_and_call_fields() -> None:
    kept = await filters.apply_filter(filters.strip_tool_calls(), _conversation())
    assert not any(isinstance(m, ToolMessage) for m in kept)
    answers = [m for m in kept if isinstance(m, AssistantMessage)]
    assert [a.text for a in answers] == ["Looking.", "It is 42.", "Sure."]
    assert all(a.tool_calls == [] for a in answers)


async def test_strip_reasoning_drops_reasoning_parts_and_signatures() -> None:
    # covers G-64
    kept = await filters.apply_filter(filters.strip_reasoning(), _conversation())
    assert all(
        not isinstance(p, ReasoningPart)
        for m in kept
        if isinstance(m, AssistantMessage)
        for p in m.parts
    )
    assert len(kept) == len(_conversation())


async def test_default_handoff_filter_is_last_10_without_secrets_or_reasoning() -> None:
    # covers G-58
    default = filters.default_handoff_filter()
    assert default.filters == (
        filters.last_n(10),
        filters.strip_sensitive_outputs(),
        filters.strip_reasoning(),
    )
    kept = await filters.apply_filter(default, _conversation())
    vault = next(m for m in kept if isinstance(m, ToolMessage) and m.tool_name == "vault")
    assert vault.content == filters.SECRET_PLACEHOLDER
    assert "hunter2" not in dump_messages(kept).decode()
    assert "I should look it up." not in dump_messages(kept).decode()


async def test_last_user_keeps_the_latest_user_turn() -> None:
    kept = await filters.apply_filter(filters.last_user(), _conversation())
    assert kept == [SYSTEM, UserMessage(content="second question")]


async def test_by_sensitivity_drops_outputs_above_the_level_with_their_calls() -> None:
    kept = await filters.apply_filter(filters.by_sensitivity("internal"), _conversation())
    assert [m.tool_name for m in kept if isinstance(m, ToolMessage)] == ["lookup"]
    first = next(m for m in kept if isinstance(m, AssistantMessage))
    assert [c.id for c in first.tool_calls] == ["c1"]  # no call is left without its result


async def test_by_sensitivity_reads_the_run_provenance_too() -> None:
    # lookup's message says public, but the run's ledger knows it read untrusted web data
    # that is internal: the higher label wins, and untrusted="drop" drops it.
    web = Provenance(
        source="https://example.com",
        kind="web",
        trust="untrusted",
        sensitivity="internal",
        tool_call_id="c1",
    )
    context = filters.FilterContext(provenance={"c1": web})
    public = await filters.apply_filter(filters.by_sensitivity("public"), _conversation(), context)
    assert not any(isinstance(m, ToolMessage) for m in public)
    kept = await filters.apply_filter(
        filters.by_sensitivity("secret", untrusted="drop"), _conversation(), context
    )
    assert [m.tool_name for m in kept if isinstance(m, ToolMessage)] == ["vault"]


def test_by_sensitivity_refuses_unknown_levels() -> None:
    with pytest.raises(UserError, match="max"):
        filters.by_sensitivity("top-secret")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="untrusted"):
        filters.by_sensitivity(untrusted="maybe")  # pyright: ignore[reportArgumentType]


async def test_summary_replaces_the_older_exchanges_with_the_summarizer_text() -> None:
    seen: list[list[Message]] = []

    async def summarize(span: Sequence[Message], summary: filters.Summary) -> str:
        seen.append(list(span))
        assert summary.keep_last == 1
        return "The user asked a first question; the answer was 42."

    context = filters.FilterContext(summarize=summarize)
    kept = await filters.apply_filter(filters.summary(), _conversation(), context)
    assert kept == [
        SYSTEM,
        UserMessage(content=f"{SUMMARY_HEADER}The user asked a first question; the answer was 42."),
        _answer("Sure."),
    ]
    assert seen == [_conversation()[1:7]]


async def test_summary_without_a_summarizer_says_so() -> None:
    with pytest.raises(UserError, match="summarizer"):
        await filters.apply_filter(filters.summary(), _conversation())


def test_summary_model_must_be_a_model_or_key() -> None:
    assert filters.summary(model="openai:gpt-4o-mini").model == "openai:gpt-4o-mini"
    with pytest.raises(UserError, match="provider:model"):
        filters.summary(model="gpt")
    with pytest.raises(UserError, match="keep_last"):
        filters.summary(keep_last=-1)


ALL = [
    filters.last_n(4),
    filters.last_user(),
    filters.summary(model="openai:gpt-4o-mini", keep_last=2, instructions="Short."),
    filters.by_sensitivity("public", untrusted="drop"),
    filters.strip_reasoning(),
    filters.strip_sensitive_outputs(),
    filters.strip_tool_calls(),
    filters.default_handoff_filter(),
    filters.compose(filters.last_user(), filters.compose(filters.strip_tool_calls())),
]


@pytest.mark.parametrize("descriptor", ALL, ids=lambda d: d.kind)
def test_descriptors_round_trip_through_jsonl(
    descriptor: filters.HandoffInputFilterDescriptor,
) -> None:
    # covers G-59
    line = filters.to_json(descriptor)
    assert "\n" not in line
    back = filters.from_json(line)
    assert back == descriptor
    assert filters.to_json(back) == line  # byte-equal


def test_from_json_refuses_what_is_not_a_descriptor() -> None:
    with pytest.raises(UserError, match="descriptor"):
        filters.from_json('{"kind": "last_n", "n": 0}')
    with pytest.raises(UserError, match="descriptor"):
        filters.from_json('{"kind": "shred"}')


# -- invariants over random conversations ------------------------------------------------

_text = st.text(alphabet="abcxyz ", min_size=0, max_size=8)


@st.composite
def _conversations(draw: st.DrawFn) -> list[Message]:
    messages: list[Message] = []
    if draw(st.booleans()):
        messages.append(SystemMessage(content=draw(_text)))
    for turn in range(draw(st.integers(0, 6))):
        messages.append(UserMessage(content=draw(_text) or "q"))
        calls = [
            ToolCall(id=f"c{turn}_{i}", name="t", arguments="{}")
            for i in range(draw(st.integers(0, 2)))
        ]
        messages.append(
            _answer(draw(_text), calls=calls, reasoning=draw(_text) if draw(st.booleans()) else "")
        )
        for call in calls:
            level: Literal["public", "internal", "secret"] = draw(
                st.sampled_from(["public", "internal", "secret"])
            )
            messages.append(
                ToolMessage(
                    tool_call_id=call.id, tool_name="t", content=draw(_text), sensitivity=level
                )
            )
    return messages


_pure = st.sampled_from(
    [
        filters.last_n(1),
        filters.last_n(3),
        filters.last_user(),
        filters.by_sensitivity("public"),
        filters.by_sensitivity("internal"),
        filters.strip_reasoning(),
        filters.strip_sensitive_outputs(),
        filters.strip_tool_calls(),
    ]
)


def _paired(messages: Sequence[Message]) -> bool:
    """Every tool result answers a call of an earlier answer."""
    calls = {c.id for m in messages if isinstance(m, AssistantMessage) for c in m.tool_calls}
    return all(m.tool_call_id in calls for m in messages if isinstance(m, ToolMessage))


@settings(max_examples=150, deadline=None)
@given(_conversations(), st.lists(_pure, max_size=3))
async def test_composed_filters_keep_invariants(
    messages: list[Message], chosen: list[filters.HandoffInputFilterDescriptor]
) -> None:
    # covers G-58
    composed = filters.compose(*chosen)
    kept = await filters.apply_filter(composed, messages)
    # A subsequence in order: filters drop or rewrite messages, never reorder or invent.
    assert len(kept) <= len(messages)
    # The system prompt always survives; reasoning never does (G-64).
    assert [m for m in kept if isinstance(m, SystemMessage)] == [
        m for m in messages if isinstance(m, SystemMessage)
    ]
    assert not any(
        isinstance(p, ReasoningPart)
        for m in kept
        if isinstance(m, AssistantMessage)
        for p in m.parts
    )
    if _paired(messages) and not any(isinstance(c, filters.LastN) for c in chosen):
        assert _paired(kept)
    # Replaying the descriptor read back from its JSON gives byte-equal messages (G-59).
    replayed = await filters.apply_filter(filters.from_json(filters.to_json(composed)), messages)
    assert dump_messages(replayed).decode() == dump_messages(kept).decode()
    # Idempotent: filtering what a filter kept changes nothing more, except last_n/last_user
    # windows, which are idempotent too.
    again = await filters.apply_filter(composed, kept)
    assert again == kept


@settings(max_examples=100, deadline=None)
@given(_conversations(), st.integers(1, 8))
async def test_last_n_keeps_exactly_the_tail(messages: list[Message], n: int) -> None:
    # covers G-58
    kept = await filters.apply_filter(filters.last_n(n), messages)
    others = [m for m in messages if not isinstance(m, SystemMessage)]
    assert [m for m in kept if not isinstance(m, SystemMessage)] == others[-n:]
