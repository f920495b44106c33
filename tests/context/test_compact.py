"""Compaction strategies: the prefix stays pinned, calls stay with their results."""

from collections.abc import Sequence

import pytest

from bastion.context import (
    SUMMARY_HEADER,
    Compaction,
    ContextConfig,
    EstimateCounter,
    clear_tool_results,
    compact,
    split_exchanges,
    summarize,
    trim,
)
from bastion.core import (
    AssistantMessage,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
)

COUNTER = EstimateCounter(chars_per_token=1)  # one token a character: sizes are easy to read
PREFIX = SystemMessage(content="You are a careful assistant.")


def turn(n: int, *, result_size: int = 10, secret: bool = False) -> list[Message]:
    """A user turn with one tool call and its result, then the answer."""
    return [
        UserMessage(content=f"question {n}"),
        AssistantMessage(tool_calls=[ToolCall(id=f"c{n}", name="look", arguments="{}")]),
        ToolMessage(
            tool_call_id=f"c{n}",
            tool_name="look",
            content="r" * result_size,
            sensitivity="secret" if secret else "public",
        ),
        AssistantMessage(parts=[TextPart(text=f"answer {n}")]),
    ]


def history(*turns: list[Message]) -> list[Message]:
    out: list[Message] = [PREFIX]
    for t in turns:
        out.extend(t)
    return out


def size(messages: Sequence[Message]) -> int:
    return COUNTER.count_messages(messages)


def test_exchanges_keep_each_call_with_its_result():
    prefix, exchanges = split_exchanges(history(turn(1), turn(2)))
    assert prefix == [PREFIX]
    assert [[m.role for m in e] for e in exchanges] == [
        ["user"],
        ["assistant", "tool"],
        ["assistant"],
    ] * 2


def test_trim_drops_the_oldest_turns_and_keeps_the_prefix_object():
    # covers A-39, G-76
    messages = history(turn(1), turn(2), turn(3), turn(4))
    budget = size(history(turn(3), turn(4)))
    result = trim(messages, COUNTER, budget=budget, keep_last=3)
    assert result.messages == history(turn(3), turn(4))
    assert result.messages[0] is PREFIX
    assert (result.exchanges_dropped, result.tokens_before, result.tokens_after) == (
        6,
        size(messages),
        budget,
    )


def test_trim_keeps_the_last_turns_even_when_they_alone_are_over_budget():
    #
    result = trim(history(turn(1), turn(2)), COUNTER, budget=1, keep_last=3)
    assert result.messages == history(turn(2))


async def test_clear_tool_results_replaces_old_large_results_with_a_handle():
    messages = history(
        turn(1, result_size=2_000), turn(2, result_size=5), turn(3, result_size=2_000)
    )
    kept: list[str] = []

    async def keep(message: ToolMessage) -> str:
        kept.append(message.tool_call_id)
        return f"h-{message.tool_call_id}"

    result = await clear_tool_results(
        messages, COUNTER, budget=500, keep_last=3, over=100, keep=keep
    )
    cleared = result.messages[3]
    assert isinstance(cleared, ToolMessage)
    assert cleared.content == (
        "[Tool result cleared to save context (2000 tokens). "
        "Read it again with read_result(handle='h-c1').]"
    )
    assert result.messages[7] == messages[7]  # small: kept
    assert result.messages[11] == messages[11]  # the last turn is never cleared
    assert (kept, result.results_cleared) == (["c1"], 1)
    assert result.tokens_after < result.tokens_before


async def test_a_secret_result_is_cleared_without_being_kept_anywhere():
    async def keep(message: ToolMessage) -> str:
        raise AssertionError("a secret result must not be copied")

    result = await clear_tool_results(
        history(turn(1, result_size=900, secret=True), turn(2)),
        COUNTER,
        budget=100,
        keep_last=3,
        over=100,
        keep=keep,
    )
    cleared = result.messages[3]
    assert isinstance(cleared, ToolMessage)
    assert cleared.content == "[Tool result cleared to save context (900 tokens).]"
    assert cleared.sensitivity == "secret"


async def test_summaries_go_after_the_prefix_and_fold_into_a_summary_of_summaries():
    # covers G-70, G-76
    seen: list[list[str]] = []

    async def summarizer(span: Sequence[Message]) -> str:
        texts = [m.text for m in span if isinstance(m, UserMessage)]
        seen.append(texts)
        return f"summary of {len(span)} messages"

    first = await summarize(
        history(turn(1), turn(2), turn(3)), COUNTER, summarizer, budget=1, keep_last=3
    )
    assert first.messages[0] is PREFIX
    assert first.messages[1] == UserMessage(content=f"{SUMMARY_HEADER}summary of 8 messages")
    assert first.messages[2:] == turn(3)
    assert first.exchanges_summarized == 6
    assert first.summary_tokens == len(f"{SUMMARY_HEADER}summary of 8 messages")

    second = await summarize(
        [*first.messages, *turn(4)], COUNTER, summarizer, budget=1, keep_last=3
    )
    # The earlier summary is summarized again with the turn after it.
    assert seen[1] == [f"{SUMMARY_HEADER}summary of 8 messages", "question 3"]
    assert second.messages[0] is PREFIX
    assert second.messages[2:] == turn(4)


async def test_hybrid_stops_at_the_first_step_that_fits():
    #
    calls: list[int] = []

    async def summarizer(span: Sequence[Message]) -> str:
        calls.append(len(span))
        return "s"

    big = history(turn(1, result_size=5_000), turn(2), turn(3))
    config = ContextConfig(strategy="hybrid", keep_last=3, clear_results_over=100)
    result = await compact(big, config, COUNTER, budget=1_000, summarizer=summarizer)
    assert (result.results_cleared, result.exchanges_summarized, calls) == (1, 0, [])

    long = history(*(turn(n) for n in range(30)))
    result = await compact(long, config, COUNTER, budget=400, summarizer=summarizer)
    assert result.exchanges_summarized > 0
    assert len(calls) == 1
    # The summary made room; what still did not fit was trimmed, never the summary itself.
    assert result.tokens_after <= 400 * config.target
    assert result.messages[1] == UserMessage(content=f"{SUMMARY_HEADER}s")


async def test_hybrid_without_a_summarizer_trims():
    config = ContextConfig(strategy="hybrid", keep_last=3)
    result = await compact(history(*(turn(n) for n in range(30))), config, COUNTER, budget=400)
    assert result.exchanges_dropped > 0
    assert result.messages[0] is PREFIX


async def test_essentials_are_re_injected_after_the_summary_and_a_failing_hook_is_reported():
    # covers G-78
    def pinned_facts(done: Compaction) -> str:
        return f"Remember: the user is Ada ({done.exchanges_summarized} exchanges summarized)."

    def broken(done: Compaction) -> str:
        raise RuntimeError("no essentials today")

    async def summarizer(span: Sequence[Message]) -> str:
        return "earlier"

    config = ContextConfig(strategy="summarize", keep_last=3, essentials=(broken, pinned_facts))
    result = await compact(
        history(turn(1), turn(2)), config, COUNTER, budget=1, summarizer=summarizer
    )
    assert [m.text for m in result.messages[1:3] if isinstance(m, UserMessage)] == [
        f"{SUMMARY_HEADER}earlier",
        "Remember: the user is Ada (3 exchanges summarized).",
    ]
    assert result.essentials == ("Remember: the user is Ada (3 exchanges summarized).",)
    assert result.hook_errors == ("broken: RuntimeError: no essentials today",)
    assert result.messages[3:] == turn(2)


async def test_summarize_without_a_summarizer_is_a_user_error():
    with pytest.raises(UserError, match="'summarize' needs a summarizer"):
        await compact(history(turn(1)), ContextConfig(strategy="summarize"), COUNTER, budget=10)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"strategy": "fold"}, "strategy='fold'"),
        ({"threshold": 0.5, "target": 0.9}, "target <= threshold"),
        ({"keep_last": -1}, "keep_last"),
        ({"max_context_tokens": 0}, "max_context_tokens=0"),
    ],
)
def test_a_bad_context_config_is_a_user_error(options: dict[str, object], message: str):
    with pytest.raises(UserError, match=message):
        ContextConfig(**options)  # pyright: ignore[reportArgumentType]


def test_the_budget_is_the_window_less_the_reserved_output():
    #
    config = ContextConfig(reserve_output_tokens=1_000)
    assert config.budget(8_000) == 7_000
    assert config.budget(None) is None
    assert (
        ContextConfig(max_context_tokens=4_000, reserve_output_tokens=1_000).budget(128_000)
        == 3_000
    )


def test_trim_in_a_long_run_keeps_the_request_the_kept_steps_answer():
    #
    request = UserMessage(content="Audit every invoice.")
    steps: list[Message] = [PREFIX, request]
    for n in range(10):
        steps.extend(turn(n)[1:3])  # one request, ten tool steps: a single user turn
    result = trim(steps, COUNTER, budget=1, keep_last=2)
    assert result.messages[:2] == [PREFIX, request]
    assert result.messages[2:] == steps[-4:]
    assert result.exchanges_dropped == 8
