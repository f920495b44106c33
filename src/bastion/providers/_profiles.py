"""Model profiles: family facts used for cost in ``Usage`` and by compaction.

Prices are USD per million tokens, from the vendors' public price lists at the time of
writing; a model with no known price gets ``cost_usd=None`` (never a guess).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import TypeVar

from bastion.core import OutputMode, Usage

__all__ = ["ModelProfile", "profile_for", "with_cost"]

_V = TypeVar("_V")


@dataclass(kw_only=True, slots=True, frozen=True)
class ModelProfile:
    """What a model family supports, its context window and its prices.

    ``output_mode`` names the structured-output mode that works best with the family
    (``native``, ``prompted`` or ``tool``); ``None`` derives it: ``native`` when the
    family has a JSON-schema mode, else ``prompted``.
    """

    tools: bool = True
    parallel_tools: bool = True
    reasoning: bool = False
    json_schema: bool = True
    output_mode: OutputMode | None = None
    vision: bool = False
    context_window: int | None = None
    input_price: float | None = None
    output_price: float | None = None
    cached_input_price: float | None = None
    cache_write_price: float | None = None
    audio_input_price: float | None = None
    audio_output_price: float | None = None
    tokenizer: str | None = None  # the offline encoding that counts exactly; None: estimate


_GENERIC = ModelProfile()

# (provider, model-name prefix) → profile; the longest matching prefix wins.
_PROFILES: dict[tuple[str, str], ModelProfile] = {
    ("openai", "gpt-4.1-nano"): ModelProfile(
        vision=True,
        context_window=1_047_576,
        input_price=0.10,
        output_price=0.40,
        cached_input_price=0.025,
    ),
    ("openai", "gpt-4.1-mini"): ModelProfile(
        vision=True,
        context_window=1_047_576,
        input_price=0.40,
        output_price=1.60,
        cached_input_price=0.10,
    ),
    ("openai", "gpt-4.1"): ModelProfile(
        vision=True,
        context_window=1_047_576,
        input_price=2.00,
        output_price=8.00,
        cached_input_price=0.50,
    ),
    ("openai", "gpt-4o-mini"): ModelProfile(
        vision=True,
        context_window=128_000,
        input_price=0.15,
        output_price=0.60,
        cached_input_price=0.075,
    ),
    ("openai", "gpt-4o"): ModelProfile(
        vision=True,
        context_window=128_000,
        input_price=2.50,
        output_price=10.00,
        cached_input_price=1.25,
    ),
    ("openai", "gpt-4o-audio-preview"): ModelProfile(
        context_window=128_000,
        input_price=2.50,
        output_price=10.00,
        audio_input_price=40.00,
        audio_output_price=80.00,
    ),
    ("openai", "gpt-4o-mini-audio-preview"): ModelProfile(
        context_window=128_000,
        input_price=0.15,
        output_price=0.60,
        audio_input_price=10.00,
        audio_output_price=20.00,
    ),
    ("openai", "o4-mini"): ModelProfile(
        reasoning=True,
        vision=True,
        context_window=200_000,
        input_price=1.10,
        output_price=4.40,
        cached_input_price=0.275,
    ),
    ("openai", "o3"): ModelProfile(
        reasoning=True,
        vision=True,
        context_window=200_000,
        input_price=2.00,
        output_price=8.00,
        cached_input_price=0.50,
    ),
    # Reasoning facts only (no prices recorded here): the Responses adapter asks these for
    # their encrypted reasoning. gpt-5-chat is the non-reasoning chat variant.
    ("openai", "gpt-5"): ModelProfile(reasoning=True, vision=True, context_window=400_000),
    ("openai", "gpt-5-chat"): ModelProfile(vision=True, context_window=128_000),
    ("openai", "o1"): ModelProfile(reasoning=True, vision=True, context_window=200_000),
    ("openai", "codex-mini"): ModelProfile(reasoning=True, context_window=200_000),
    ("anthropic", "claude-sonnet-4"): ModelProfile(
        reasoning=True,
        vision=True,
        context_window=200_000,
        input_price=3.00,
        output_price=15.00,
        cached_input_price=0.30,
        cache_write_price=3.75,
    ),
    ("anthropic", "claude-opus-4"): ModelProfile(
        reasoning=True,
        vision=True,
        context_window=200_000,
        input_price=15.00,
        output_price=75.00,
        cached_input_price=1.50,
        cache_write_price=18.75,
    ),
    ("anthropic", "claude-3-5-haiku"): ModelProfile(
        vision=True,
        context_window=200_000,
        input_price=0.80,
        output_price=4.00,
        cached_input_price=0.08,
        cache_write_price=1.00,
    ),
    ("gemini", "gemini-2.5-pro"): ModelProfile(
        reasoning=True, vision=True, context_window=1_048_576, input_price=1.25, output_price=10.00
    ),
    ("gemini", "gemini-2.5-flash"): ModelProfile(
        reasoning=True, vision=True, context_window=1_048_576, input_price=0.30, output_price=2.50
    ),
}
_ALIASES = {"openai-responses": "openai"}

# (provider, model-name prefix) -> the offline encoding of the family's tokenizer, where the
# vendor publishes it. Vendors without one (Anthropic, Gemini) are counted by estimate,
# calibrated from their reported usage. The longest matching prefix wins.
_TOKENIZERS: dict[tuple[str, str], str] = {
    ("openai", ""): "o200k_base",
    ("openai", "gpt-4-"): "cl100k_base",
    ("openai", "gpt-4"): "cl100k_base",
    ("openai", "gpt-4o"): "o200k_base",
    ("openai", "gpt-4.1"): "o200k_base",
    ("openai", "gpt-3.5"): "cl100k_base",
    ("openai", "gpt-oss"): "o200k_harmony",
}


def _longest(table: dict[tuple[str, str], _V], family: str, model: str) -> _V | None:
    best: tuple[int, _V] | None = None
    for (known_provider, prefix), value in table.items():
        matches = known_provider == family and model.startswith(prefix)
        if matches and (best is None or len(prefix) > best[0]):
            best = (len(prefix), value)
    return best[1] if best else None


def profile_for(provider: str, model: str) -> ModelProfile:
    """The profile of ``model`` at ``provider``: the longest known prefix, else generic."""
    family = _ALIASES.get(provider, provider)
    profile = _longest(_PROFILES, family, model) or _GENERIC
    if profile.tokenizer is None:
        tokenizer = _longest(_TOKENIZERS, family, model)
        if tokenizer is not None:
            profile = replace(profile, tokenizer=tokenizer)
    return profile


def with_cost(usage: Usage, profile: ModelProfile) -> Usage:
    """``usage`` with ``cost_usd`` filled in from the profile's prices (None if unpriced).

    Cached input is billed at the cached price, cache writes at the write price, audio at the
    audio prices where the profile has them (audio tokens are counted inside the prompt and
    completion totals), the rest of the prompt at the input price; reasoning tokens are part
    of the completion.
    """
    if profile.input_price is None or profile.output_price is None:
        return usage
    cached = usage.cached_read_tokens
    written = usage.cache_write_tokens
    audio_in = usage.audio_input_tokens if profile.audio_input_price is not None else 0
    audio_out = usage.audio_output_tokens if profile.audio_output_price is not None else 0
    plain = max(0, usage.prompt_tokens - cached - written - audio_in)
    cost = (
        plain * profile.input_price
        + cached
        * (
            profile.cached_input_price
            if profile.cached_input_price is not None
            else profile.input_price
        )
        + written
        * (
            profile.cache_write_price
            if profile.cache_write_price is not None
            else profile.input_price
        )
        + max(0, usage.completion_tokens - audio_out) * profile.output_price
        + audio_in * (profile.audio_input_price or 0.0)
        + audio_out * (profile.audio_output_price or 0.0)
    ) / 1_000_000
    return replace(usage, cost_usd=cost)
