"""Token counting offline: exact where the tokenizer is public, calibrated where it is not."""

import pytest

from bastion.context import (
    CalibratedCounter,
    EstimateCounter,
    TokenCounter,
    TokenizerCounter,
    TokenLedger,
    token_counter,
)
from bastion.core import (
    AssistantMessage,
    ImagePart,
    Message,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
)


def test_o200k_counts_match_the_published_encoding():
    counter = TokenizerCounter("o200k_base")
    # Reference counts from the o200k_base vocabulary (the same ids as tiktoken's).
    assert counter.count_text("Hello world") == 2
    assert counter.count_text("") == 0
    assert counter.count_text("héllo wörld 你好") == 7


@pytest.mark.parametrize(
    ("encoding", "expected"),
    [("cl100k_base", 9), ("o200k_base", 7), ("llama3", 8), ("qwen3", 8)],
)
def test_each_offline_encoding_counts_without_network(encoding: str, expected: int):
    assert TokenizerCounter(encoding).count_text("héllo wörld 你好") == expected


def test_an_unknown_encoding_is_a_user_error_naming_the_choices():
    with pytest.raises(UserError, match=r"Unknown encoding 'gpt2'\. Available: o200k_base"):
        TokenizerCounter("gpt2")


def test_a_conversation_counts_its_parts_calls_results_and_framing():
    counter = TokenizerCounter()
    text = counter.count_text
    messages = [
        SystemMessage(content="Be brief."),
        UserMessage(content="Weather in Paris?"),
        AssistantMessage(
            parts=[TextPart(text="Checking.")],
            tool_calls=[ToolCall(id="c1", name="weather", arguments='{"city": "Paris"}')],
        ),
        ToolMessage(tool_call_id="c1", tool_name="weather", content="18 C, clear"),
    ]
    expected = (
        3  # the reply's priming
        + 4 * 3  # four messages' framing
        + text("Be brief.")
        + text("Weather in Paris?")
        + text("Checking.")
        + text("weather") + text('{"city": "Paris"}') + 3
        + text("weather") + text("18 C, clear")
    )  # fmt: skip
    assert counter.count_messages(messages) == expected


def test_an_image_counts_a_fixed_allowance_not_its_base64_text():
    counter = TokenizerCounter()
    image = UserMessage(content=[ImagePart(data="A" * 40_000, media_type="image/png")])
    assert counter.count_messages([image]) == 3 + 3 + 1_105


def test_counts_are_cached_per_text():
    counter = TokenizerCounter()
    text = "a long tool result " * 1000
    first = counter.count_text(text)
    calls: list[str] = []
    counter._encode = lambda t: calls.append(t) or 0
    assert counter.count_text(text) == first
    assert calls == []


def test_estimate_is_four_characters_a_token_by_default():
    assert EstimateCounter().count_text("x" * 10) == 3
    assert EstimateCounter(chars_per_token=2).count_text("x" * 10) == 5
    with pytest.raises(UserError, match="chars_per_token must be > 0"):
        EstimateCounter(chars_per_token=0)


def test_calibration_learns_the_vendors_ratio_from_reported_usage():
    counter = CalibratedCounter(EstimateCounter(), weight=0.5)
    assert counter.count_text("x" * 400) == 100
    counter.observe(100, 130)  # the first observation sets the ratio
    assert counter.count_text("x" * 400) == 130
    counter.observe(100, 110)  # later ones move it half-way
    assert round(counter.factor, 2) == 1.2
    counter.observe(0, 50)  # nothing counted: ignored
    counter.observe(50, 0)  # usage not reported: ignored
    assert (counter.observations, round(counter.factor, 2)) == (2, 1.2)


def test_a_wild_ratio_is_bounded():
    counter = CalibratedCounter(EstimateCounter())
    counter.observe(1, 1000)
    assert counter.factor == 4.0


def test_token_counter_is_exact_for_public_tokenizers_and_calibrated_otherwise():
    exact = token_counter("cl100k_base")
    assert isinstance(exact, TokenizerCounter)
    estimated = token_counter(None)
    assert isinstance(estimated, CalibratedCounter)
    assert isinstance(estimated, TokenCounter)
    assert isinstance(estimated.base, TokenizerCounter)


def test_the_ledger_counts_only_what_each_step_added_and_recounts_a_changed_history():
    counted: list[str] = []

    class Spy(TokenizerCounter):
        def count_text(self, text: str) -> int:
            counted.append(text)
            return super().count_text(text)

    counter = Spy()
    ledger = TokenLedger(counter)
    history: list[Message] = [
        SystemMessage(content="Be brief."),
        UserMessage(content="hello there"),
    ]
    assert ledger.count(history) == TokenizerCounter().count_messages(history)
    counted.clear()
    history = [*history, AssistantMessage(parts=[TextPart(text="hi!")])]
    assert ledger.count(history) == TokenizerCounter().count_messages(history)
    assert counted == ["hi!"]  # the ledger counted the new message only
    changed: list[Message] = [history[0], UserMessage(content="something else"), history[2]]
    assert ledger.count(changed) == TokenizerCounter().count_messages(changed)
    assert ledger.count(changed[:1]) == TokenizerCounter().count_messages(changed[:1])


def test_the_ledger_scales_a_calibrated_counter_by_its_current_factor():
    counter = CalibratedCounter(EstimateCounter())
    ledger = TokenLedger(counter)
    history: list[Message] = [UserMessage(content="x" * 400)]
    assert ledger.count(history) == counter.count_messages(history)
    counter.observe(100, 150)
    assert ledger.count(history) == counter.count_messages(history)
