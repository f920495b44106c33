"""Fallback between models: which failures move a step on, and a breaker per model.

``FallbackPolicy`` is read by the call-model step (``steps/_call_model.py``): after retries,
an error of one of its classes moves the step to the next of the agent's fallback models.
Its ``CircuitBreaker`` keeps, per model key, the count of failures in a row; past the
threshold the model's circuit opens and every run sharing the breaker skips that model
(without calling it) until the cool-down has passed, when one call probes it: success
closes the circuit, failure opens it again. Time comes from a clock, so tests use
``bastion.testing.VirtualClock``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Literal

from bastion.core import (
    Clock,
    ConnectionFailed,
    ContextLengthExceeded,
    MalformedResponse,
    ModelError,
    ModelFellbackEvent,
    ModelTimeout,
    Overloaded,
    RateLimited,
    SensitivityRefused,
    SystemClock,
    UserError,
)

__all__ = [
    "FALLBACK_ERRORS",
    "TRANSPORT_ERRORS",
    "CircuitBreaker",
    "CircuitState",
    "FallbackPolicy",
    "OnFallback",
]

FALLBACK_ERRORS: tuple[type[ModelError], ...] = (
    RateLimited,
    Overloaded,
    ContextLengthExceeded,
    SensitivityRefused,
)
"""The errors that move a step to the next model by default."""

TRANSPORT_ERRORS: tuple[type[ModelError], ...] = (ConnectionFailed, ModelTimeout)
"""Unreachable hosts, broken streams and timeouts: add them to ``FallbackPolicy.on``."""

_UNHEALTHY: tuple[type[ModelError], ...] = (
    RateLimited,
    Overloaded,
    ConnectionFailed,
    ModelTimeout,
    MalformedResponse,
)

CircuitState = Literal["closed", "open", "half_open"]
OnFallback = Callable[[ModelFellbackEvent], "Awaitable[None] | None"]


def _check_error_classes(owner: str, classes: object) -> tuple[type[BaseException], ...]:
    if not isinstance(classes, tuple) or not classes:
        raise UserError(f"{owner} must be a non-empty tuple of exception classes, got {classes!r}.")
    for item in classes:  # pyright: ignore[reportUnknownVariableType]
        if not (isinstance(item, type) and issubclass(item, BaseException)):
            raise UserError(
                f"{owner} must hold exception classes such as RateLimited or ModelTimeout, "
                f"got {item!r}."
            )
    return classes  # pyright: ignore[reportUnknownVariableType]


@dataclass(kw_only=True, slots=True)
class _Circuit:
    failures: int = 0
    opened_at: float | None = None
    probing: bool = False
    last_error: str | None = None


class CircuitBreaker:
    """Per-model circuit breakers, shared by every run (and agent) given this object.

    Example::

        breaker = CircuitBreaker(failure_threshold=3, cool_down=60)
        policy = FallbackPolicy(on=(*FALLBACK_ERRORS, *TRANSPORT_ERRORS), circuit_breaker=breaker)
        agent = Agent("a", model=primary,
                      model_options=ModelOptions(fallbacks=[backup], fallback_policy=policy))

    Args:
        failure_threshold: Failed calls in a row (retries included) that open a model's
            circuit.
        cool_down: Seconds an open circuit stays open before one call may probe the model.
        counts: The errors that count as failures: by default rate limits, overload,
            connection failures (broken streams included), timeouts and malformed answers.
            Errors about the request itself (bad request, context length) never count.
        clock: The clock of the cool-down (``VirtualClock`` in tests).

    Raises:
        UserError: A threshold below 1, a negative cool-down or bad ``counts``.
    """

    def __init__(
        self,
        *,
        failure_threshold: int = 5,
        cool_down: float = 30.0,
        counts: tuple[type[BaseException], ...] = _UNHEALTHY,
        clock: Clock | None = None,
    ) -> None:
        if isinstance(failure_threshold, bool) or not isinstance(failure_threshold, int):
            raise UserError(
                f"CircuitBreaker.failure_threshold must be an int, got {failure_threshold!r}."
            )
        if failure_threshold < 1:
            raise UserError(
                f"CircuitBreaker.failure_threshold must be >= 1, got {failure_threshold!r}."
            )
        if not isinstance(cool_down, (int, float)) or cool_down < 0:
            raise UserError(f"CircuitBreaker.cool_down must be >= 0 seconds, got {cool_down!r}.")
        self.failure_threshold = failure_threshold
        self.cool_down = float(cool_down)
        self.counts = _check_error_classes("CircuitBreaker.counts", counts)
        self.clock: Clock = clock or SystemClock()
        self._circuits: dict[str, _Circuit] = {}

    def state(self, model: str) -> CircuitState:
        """The state of the circuit of ``model`` (a model key, ``"provider:name"``)."""
        circuit = self._circuits.get(model)
        if circuit is None or circuit.opened_at is None:
            return "closed"
        if circuit.probing or self.clock.monotonic() >= circuit.opened_at + self.cool_down:
            return "half_open"
        return "open"

    def retry_in(self, model: str) -> float:
        """Seconds until an open circuit of ``model`` lets a probe through (0 if it would)."""
        circuit = self._circuits.get(model)
        if circuit is None or circuit.opened_at is None:
            return 0.0
        return max(0.0, circuit.opened_at + self.cool_down - self.clock.monotonic())

    def allow(self, model: str) -> bool:
        """Whether a call to ``model`` may go out now; claims the probe of a cooled circuit.

        The first caller after the cool-down becomes the probe; until it reports back
        (:meth:`record_success`, :meth:`record_failure` or :meth:`release`) other callers
        are refused, so one failing model is not hit by every waiting run at once.
        """
        circuit = self._circuits.get(model)
        if circuit is None or circuit.opened_at is None:
            return True
        if circuit.probing or self.clock.monotonic() < circuit.opened_at + self.cool_down:
            return False
        circuit.probing = True
        return True

    def counts_as_failure(self, error: BaseException) -> bool:
        """Whether ``error`` says the model is unhealthy (and so counts toward opening)."""
        return isinstance(error, self.counts)

    def record_success(self, model: str) -> bool:
        """A call to ``model`` succeeded. True when this closed an open circuit."""
        circuit = self._circuits.pop(model, None)
        return circuit is not None and circuit.opened_at is not None

    def record_failure(self, model: str, error: BaseException) -> bool:
        """A call to ``model`` failed with ``error``. True when this opened its circuit."""
        circuit = self._circuits.setdefault(model, _Circuit())
        circuit.failures += 1
        circuit.last_error = f"{type(error).__name__}: {error}"
        was_probe = circuit.probing
        circuit.probing = False
        if was_probe or (circuit.opened_at is None and circuit.failures >= self.failure_threshold):
            circuit.opened_at = self.clock.monotonic()
            return True
        return False

    def release(self, model: str) -> None:
        """Give back a probe claimed by :meth:`allow` that ended with no verdict (an abort)."""
        circuit = self._circuits.get(model)
        if circuit is not None:
            circuit.probing = False

    def failures(self, model: str) -> int:
        """Failures of ``model`` in a row so far."""
        circuit = self._circuits.get(model)
        return 0 if circuit is None else circuit.failures

    def reset(self, model: str | None = None) -> None:
        """Close the circuit of ``model`` (of every model when None) and forget its failures."""
        if model is None:
            self._circuits.clear()
        else:
            self._circuits.pop(model, None)

    def __repr__(self) -> str:
        open_ = sorted(k for k in self._circuits if self.state(k) != "closed")
        return (
            f"CircuitBreaker(failure_threshold={self.failure_threshold}, "
            f"cool_down={self.cool_down:g}, open={open_!r})"
        )


@dataclass(kw_only=True, slots=True, frozen=True)
class FallbackPolicy:
    """When a step moves from a failing model to the next of ``ModelOptions.fallbacks``.

    Example::

        FallbackPolicy(
            on=(*FALLBACK_ERRORS, *TRANSPORT_ERRORS),  # also on outages and timeouts
            circuit_breaker=CircuitBreaker(failure_threshold=3, cool_down=60),
            on_fallback=lambda event: log.warning("fell back: %s", event.error),
        )

    Attributes:
        on: The error classes that move the step on, after retries. ``None`` (default):
            the errors marked ``fallback_eligible`` (:data:`FALLBACK_ERRORS`: rate limits,
            overload, context length, refused sensitivity). Add :data:`TRANSPORT_ERRORS`
            to fall back when a vendor cannot be reached, its stream breaks or it times out.
        circuit_breaker: Skips models that keep failing (see :class:`CircuitBreaker`);
            share one object between agents to share what they learn. ``None``: no breaker.
        on_fallback: Called (sync or async) with each ``agent.model.fellback`` event, after
            it is emitted and before the next model is called.
    """

    on: tuple[type[BaseException], ...] | None = None
    circuit_breaker: CircuitBreaker | None = None
    on_fallback: OnFallback | None = None

    def __post_init__(self) -> None:
        if self.on is not None:
            _check_error_classes("FallbackPolicy.on", self.on)
        if self.circuit_breaker is not None and not isinstance(
            self.circuit_breaker, CircuitBreaker
        ):
            raise UserError(
                "FallbackPolicy.circuit_breaker must be a CircuitBreaker, "
                f"got {self.circuit_breaker!r}."
            )
        if self.on_fallback is not None and not callable(self.on_fallback):
            raise UserError(
                f"FallbackPolicy.on_fallback must be callable, got {self.on_fallback!r}."
            )

    def moves_on(self, error: BaseException) -> bool:
        """Whether ``error`` (after retries) moves the step to the next model."""
        if self.on is None:
            return isinstance(error, ModelError) and error.fallback_eligible
        return isinstance(error, self.on)
