"""Token and cost accounting, per model and summed over a run."""

from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

__all__ = ["Usage"]


@dataclass(kw_only=True, slots=True)
class Usage:
    """What model calls consumed.

    ``total_tokens`` is ``prompt_tokens + completion_tokens``: reasoning tokens are part of
    the completion on every vendor that reports them, so they are not added again. Likewise
    ``prompt_tokens`` includes the cached tokens read (``cached_read_tokens``), the tokens
    written to the cache (``cache_write_tokens``) and audio input; adapters of vendors that
    report them apart (Anthropic) add them up, so cost can price each share.
    ``cost_usd`` is ``None`` when no price was known for any call summed in.
    ``unreported_requests`` counts the calls whose server sent no usage at all: their zeros
    mean "not reported", not "free".
    """

    prompt_tokens: int = 0
    completion_tokens: int = 0
    reasoning_tokens: int = 0
    cached_read_tokens: int = 0
    cache_write_tokens: int = 0
    audio_input_tokens: int = 0
    audio_output_tokens: int = 0
    requests: int = 0
    unreported_requests: int = 0
    cost_usd: float | None = None
    provider_metrics: dict[str, Any] | None = None

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens."""
        return self.prompt_tokens + self.completion_tokens

    @property
    def input_tokens(self) -> int:
        """Alias of ``prompt_tokens``."""
        return self.prompt_tokens

    @property
    def output_tokens(self) -> int:
        """Alias of ``completion_tokens``."""
        return self.completion_tokens

    @property
    def cached_tokens(self) -> int:
        """Alias of ``cached_read_tokens``."""
        return self.cached_read_tokens

    def __add__(self, other: Usage) -> Usage:
        if not isinstance(other, Usage):
            return NotImplemented
        if self.cost_usd is None and other.cost_usd is None:
            cost = None
        else:
            cost = (self.cost_usd or 0.0) + (other.cost_usd or 0.0)
        return Usage(
            prompt_tokens=self.prompt_tokens + other.prompt_tokens,
            completion_tokens=self.completion_tokens + other.completion_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
            cached_read_tokens=self.cached_read_tokens + other.cached_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            audio_input_tokens=self.audio_input_tokens + other.audio_input_tokens,
            audio_output_tokens=self.audio_output_tokens + other.audio_output_tokens,
            requests=self.requests + other.requests,
            unreported_requests=self.unreported_requests + other.unreported_requests,
            cost_usd=cost,
            provider_metrics=None,
        )

    @property
    def reported(self) -> bool:
        """False when no call summed in reported usage (its zeros mean "unknown")."""
        return self.unreported_requests == 0 or self.unreported_requests < self.requests

    def describe_tokens(self) -> str:
        """The tokens as people should read them, never "0" for what was not reported.

        ``"1,234 tokens"``; ``"tokens not reported"`` when no call's server sent usage; a
        lower bound (``"≥ 1,234 tokens (1 call not reported)"``) when some did not.
        """
        unreported = self.unreported_requests
        if unreported == 0:
            return f"{self.total_tokens:,} tokens"
        if not self.reported:
            return "tokens not reported"
        calls = "1 call" if unreported == 1 else f"{unreported} calls"
        return f"≥ {self.total_tokens:,} tokens ({calls} not reported)"

    def is_empty(self) -> bool:
        """Return True when nothing was counted."""
        return all(
            getattr(self, f.name) in (0, None) for f in fields(self) if f.name != "provider_metrics"
        )
