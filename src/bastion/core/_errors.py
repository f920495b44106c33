"""Exception hierarchy of Bastion.

Two roots: :class:`UserError` is misuse, raised before any side effect; :class:`RunError`
is a failure during a run. Model (provider) failures are :class:`ModelError` subclasses,
mapped at the adapter boundary so that retry and fallback can decide on them::

    BastionError
    ├── UserError
    │   └── ConcurrentRunError
    └── RunError
        ├── ModelError
        │   ├── RateLimited          (retryable, fallback-eligible)
        │   ├── Overloaded           (retryable, fallback-eligible)
        │   ├── ContextLengthExceeded (fallback-eligible)
        │   ├── AuthenticationFailed
        │   ├── BadRequest
        │   ├── ModelTimeout         (retryable)
        │   ├── ConnectionFailed     (retryable)
        │   │   └── StreamInterrupted (the answer had started streaming when it broke)
        │   ├── MalformedResponse    (retryable: garbage, truncated or out-of-order stream)
        │   ├── SensitivityRefused   (fallback-eligible: the model may not see this data)
        │   ├── CircuitOpen          (every model of the chain is resting after failures)
        │   └── ContentFiltered
        ├── ScriptExhausted          (a scripted test model ran out of turns)
        └── RunFailed                (raised by ``RunResult.raise_for_status``)

A tool failure is never an exception of the run: it becomes an error tool result that the
model reads.
"""

from __future__ import annotations

from collections.abc import Mapping

__all__ = [
    "AuthenticationFailed",
    "BadRequest",
    "BastionError",
    "CircuitOpen",
    "ConcurrentRunError",
    "ConnectionFailed",
    "ContentFiltered",
    "ContextLengthExceeded",
    "MalformedResponse",
    "ModelError",
    "ModelTimeout",
    "Overloaded",
    "RateLimited",
    "RunError",
    "RunFailed",
    "ScriptExhausted",
    "SensitivityRefused",
    "StreamInterrupted",
    "UserError",
]


class BastionError(Exception):
    """Root of every exception Bastion raises."""


class UserError(BastionError):
    """The library was used wrongly (bad configuration, bad argument).

    Raised before any side effect, so nothing needs to be undone.
    """


class ConcurrentRunError(UserError):
    """An agent with ``max_concurrent_runs`` already has that many runs in flight."""


class RunError(BastionError):
    """A failure while a run was in progress."""


class ModelError(RunError):
    """A model call failed. Adapters map vendor errors to one of the subclasses.

    Attributes:
        status: HTTP status code, when the failure came over HTTP.
        body: The response body, verbatim, when there was one.
        vendor_code: The vendor's own error code or type, when it gave one.
        retry_after: Seconds the vendor asked us to wait before trying again.
        retryable: Whether retrying may help (per class; an instance may override it).
    """

    retryable: bool = False
    fallback_eligible: bool = False

    def __init__(
        self,
        message: str,
        *,
        status: int | None = None,
        body: str | None = None,
        vendor_code: str | None = None,
        retry_after: float | None = None,
        headers: Mapping[str, str] | None = None,
        retryable: bool | None = None,
    ) -> None:
        super().__init__(message)
        if retryable is not None:  # e.g. a 429 for an exhausted quota: waiting will not help
            self.retryable = retryable
        self.message = message
        self.status = status
        self.body = body
        self.vendor_code = vendor_code
        self.retry_after = retry_after
        self.headers = dict(headers) if headers else {}

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.message!r}, status={self.status!r})"


class RateLimited(ModelError):
    """The vendor rejected the call for rate or quota reasons (HTTP 429)."""

    retryable = True
    fallback_eligible = True


class Overloaded(ModelError):
    """The vendor is out of capacity or failed on its side (HTTP 5xx, 529)."""

    retryable = True
    fallback_eligible = True


class ContextLengthExceeded(ModelError):
    """The request does not fit the model's context window.

    Not retried on the same model; a fallback model with a larger window may fit it.
    """

    fallback_eligible = True


class AuthenticationFailed(ModelError):
    """The credentials were missing, wrong, or lack permission (HTTP 401/403)."""


class BadRequest(ModelError):
    """The vendor rejected the request as malformed (HTTP 400/404/422)."""


class ModelTimeout(ModelError):
    """The call did not answer in time."""

    retryable = True


class ConnectionFailed(ModelError):
    """The connection to the vendor could not be made or broke (reset, DNS, refused)."""

    retryable = True


class StreamInterrupted(ConnectionFailed):
    """The connection broke after the answer had started streaming.

    Different from failing to connect: the vendor was reached and answered, then the stream
    stopped before its end (a reset, a proxy cutting the body). Retried like any dropped
    connection while nothing of the answer has reached the consumer.
    """


class MalformedResponse(ModelError):
    """The vendor's answer could not be parsed (garbage, truncated or out-of-order stream)."""

    retryable = True


class SensitivityRefused(ModelError):
    """The request carries data of a tier the model's provider does not accept.

    Raised before anything is sent; a fallback model that accepts the tier may take over.
    """

    fallback_eligible = True


class CircuitOpen(ModelError):
    """No call was made: every model the step could use has an open circuit breaker.

    ``retry_after`` is the number of seconds until the first of them may be probed again.
    """


class ContentFiltered(ModelError):
    """The vendor's content filter refused the request or the answer."""


class ScriptExhausted(RunError):
    """A scripted test model was asked for more turns than its script holds."""


class RunFailed(RunError):
    """Raised by ``RunResult.raise_for_status()`` for a run that did not complete.

    Attributes:
        code: The failure code of the run, e.g. ``"guardrail_blocked"``.
    """

    def __init__(self, message: str, *, code: str) -> None:
        super().__init__(message)
        self.code = code
