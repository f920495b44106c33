"""Model profiles and cost (issue 3: prices per million tokens used for Usage.cost_usd)."""

from __future__ import annotations

import pytest

from bastion.core import Usage
from bastion.providers import profile_for, with_cost


def test_the_longest_prefix_wins() -> None:
    assert profile_for("openai", "gpt-4.1-mini-2025-04-14").input_price == 0.40
    assert profile_for("openai", "gpt-4.1").input_price == 2.00
    assert profile_for("openai-responses", "gpt-4o").output_price == 10.00
    assert profile_for("ollama", "qwen2.5:7b").input_price is None


def test_cost_uses_cached_and_cache_write_prices() -> None:
    # covers C2 (cost)
    profile = profile_for("anthropic", "claude-sonnet-4-20250514")
    usage = Usage(
        prompt_tokens=1_000_000,
        completion_tokens=100_000,
        cached_read_tokens=400_000,
        cache_write_tokens=100_000,
    )
    priced = with_cost(usage, profile)
    expected = (500_000 * 3.00 + 400_000 * 0.30 + 100_000 * 3.75 + 100_000 * 15.00) / 1e6
    assert priced.cost_usd == pytest.approx(expected)


def test_unpriced_models_have_no_cost() -> None:
    usage = Usage(prompt_tokens=10, completion_tokens=10)
    assert with_cost(usage, profile_for("ollama", "llama3")).cost_usd is None


def test_audio_tokens_are_priced_at_the_audio_rates() -> None:
    # covers C2
    profile = profile_for("openai", "gpt-4o-audio-preview-2025-06-03")
    assert (profile.audio_input_price, profile.audio_output_price) == (40.0, 80.0)
    usage = Usage(
        prompt_tokens=1_000,  # 400 of them audio
        completion_tokens=500,  # 300 of them audio
        audio_input_tokens=400,
        audio_output_tokens=300,
        requests=1,
    )
    cost = with_cost(usage, profile).cost_usd
    expected = (600 * 2.50 + 400 * 40.0 + 200 * 10.0 + 300 * 80.0) / 1_000_000
    assert cost == pytest.approx(expected)
    # Text-only models count audio tokens at their text prices (they report none).
    plain = with_cost(usage, profile_for("openai", "gpt-4o"))
    assert plain.cost_usd == pytest.approx((1_000 * 2.50 + 500 * 10.0) / 1_000_000)
