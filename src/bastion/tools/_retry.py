"""Transparent retry of rate-limited tools that may safely run again.

A tool signals a rate limit by raising :class:`ToolRateLimited` (or
``ToolError(kind="rate_limited")``, or the core ``RateLimited`` of a model call it made).
Such a call runs again, with exponential backoff on the run's clock, when running it twice
cannot do harm: the tool is ``pure`` or ``read_only``, or has an ``idempotency_key`` (the
retry reuses the key). A ``side_effecting`` or ``external_stateful`` tool without a key is
never retried: the model reads the error. Once the attempts are spent, the last error is
the result.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import TypeVar

from bastion.core import Clock, RateLimited, UserError

from ._outcome import ToolError
from ._tool import Tool

T = TypeVar("T")

__all__ = [
    "ToolRateLimited",
    "ToolRetry",
    "check_tool_retry",
    "retries_safely",
    "retry_after_failure",
]


class ToolRateLimited(ToolError):
    """Raised by a tool whose backend refused the call for rate or quota reasons.

    A ``pure``, ``read_only`` or idempotent tool is retried (see :class:`ToolRetry`);
    otherwise, or once the attempts are spent, the model reads ``message`` as a
    ``rate_limited`` error.

    Args:
        message: What the model reads.
        retry_after: Seconds the backend asked to wait; the backoff waits at least this
            (up to ``ToolRetry.max_delay``).
        metadata: Data for the application, not shown to the model.
    """

    def __init__(
        self,
        message: str = "The tool's backend is rate-limited; try again later.",
        *,
        retry_after: float | None = None,
        metadata: Mapping[str, object] | None = None,
    ) -> None:
        super().__init__(message, kind="rate_limited", metadata=metadata)
        self.retry_after = retry_after


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolRetry:
    """How rate-limited calls of tools that may safely run again are retried.

    Example::

        agent = Agent("a", model=model, tools=[lookup],
                      tool_options=ToolOptions(retry=ToolRetry(attempts=5, base_delay=1.0)))

    Attributes:
        attempts: Most attempts per call, the first included (1: never retry).
        base_delay: Seconds before the second attempt; doubled for each one after.
        max_delay: The longest wait between two attempts.
    """

    attempts: int = 3
    base_delay: float = 0.25
    max_delay: float = 8.0

    def __post_init__(self) -> None:
        attempts: object = self.attempts
        if isinstance(attempts, bool) or not isinstance(attempts, int) or attempts < 1:
            raise UserError(f"ToolRetry.attempts must be an int >= 1, got {attempts!r}.")
        if self.base_delay < 0 or self.max_delay < self.base_delay:
            raise UserError(
                f"ToolRetry needs 0 <= base_delay <= max_delay, got base_delay="
                f"{self.base_delay!r}, max_delay={self.max_delay!r}."
            )

    def delay(self, failed: int, error: BaseException) -> float:
        """Seconds to wait after the ``failed``-th attempt (1-based) raised ``error``."""
        wait = self.base_delay * 2 ** (failed - 1)
        asked = getattr(error, "retry_after", None)
        if isinstance(asked, (int, float)):
            wait = max(wait, float(asked))
        return min(wait, self.max_delay)


def check_tool_retry(value: ToolRetry | None, owner: str) -> ToolRetry | None:
    """An agent's ``ToolOptions.retry``, checked (``None``: never retry)."""
    if value is not None and not isinstance(value, ToolRetry):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: retry must be a ToolRetry or None, got {value!r}.")
    return value


def retries_safely(tool: Tool) -> bool:
    """Whether running ``tool`` again after a failure cannot repeat a side effect."""
    return tool.side_effect_class in ("pure", "read_only") or tool.idempotency_key is not None


def _rate_limited(error: BaseException) -> bool:
    if isinstance(error, ToolError):
        return error.kind == "rate_limited"
    return isinstance(error, RateLimited) and error.retryable


async def retry_after_failure(
    policy: ToolRetry,
    clock: Clock,
    error: Exception,
    attempt: Callable[[], Awaitable[T]],
    on_retry: Callable[[int, float, BaseException], None],
) -> T:
    """Retry a call whose first attempt failed with ``error``, while it is rate-limited.

    Waits and calls ``attempt()`` again while the error is a rate limit and attempts last;
    re-raises the last error otherwise. ``on_retry(next_attempt, delay, error)`` is told
    before each wait. The first attempt is the caller's own, so a call that succeeds at
    once costs nothing here.
    """
    failed = 1
    while failed < policy.attempts and _rate_limited(error):
        delay = policy.delay(failed, error)
        on_retry(failed + 1, delay, error)
        await clock.sleep(delay)
        try:
            return await attempt()
        except Exception as again:
            error = again
            failed += 1
    raise error
