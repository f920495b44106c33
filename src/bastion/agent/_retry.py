"""Retry of failed model calls: exponential backoff with jitter, honouring Retry-After."""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

from bastion.core import ModelError, UserError

__all__ = ["RetryConfig", "default_retryable"]

_TRANSIENT_WORDS = ("rate limit", "overloaded", "econnreset", "etimedout", "enotfound", "timed out")


def default_retryable(error: BaseException) -> bool:
    """Return True for errors worth retrying: rate limits, 5xx, timeouts, dropped connections."""
    if isinstance(error, ModelError):
        return error.retryable
    if isinstance(error, (ConnectionError, TimeoutError)):
        return True
    text = str(error).lower()
    return any(word in text for word in _TRANSIENT_WORDS)


@dataclass(kw_only=True, slots=True, frozen=True)
class RetryConfig:
    """How a failed model call is retried before the step fails or falls back.

    The delay before retry ``n`` (0-based) is ``min(max_delay, initial_delay * 2**n)`` plus
    up to ``jitter`` seconds of random jitter; a vendor's ``retry_after`` replaces it when
    given. A stream that already produced events is never retried.

    Attributes:
        max_retries: Retries after the first attempt (0 disables retrying).
        initial_delay: Seconds before the first retry.
        max_delay: Cap on the exponential delay, in seconds.
        jitter: Maximum random seconds added to each delay.
        retryable: Decides whether an error is worth retrying.
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 10.0
    jitter: float = 0.2
    retryable: Callable[[BaseException], bool] = default_retryable

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise UserError(f"RetryConfig.max_retries must be >= 0, got {self.max_retries!r}.")
        if self.initial_delay < 0 or self.max_delay < 0 or self.jitter < 0:
            raise UserError("RetryConfig delays and jitter must be >= 0.")

    def delay(self, attempt: int, error: BaseException, rng: random.Random | None = None) -> float:
        """Seconds to wait before retry number ``attempt`` (0-based) after ``error``."""
        retry_after = getattr(error, "retry_after", None)
        if isinstance(retry_after, (int, float)) and retry_after >= 0:
            return float(retry_after)
        base = min(self.max_delay, self.initial_delay * (2**attempt))
        return base + (rng or random).uniform(0, self.jitter) if self.jitter else base
