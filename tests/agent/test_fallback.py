"""Fallback policy and circuit breaker (issue 12, SPEC §3.3 scenario 17, G-65..G-67)."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, RetryConfig
from bastion.agent import (
    FALLBACK_ERRORS,
    TRANSPORT_ERRORS,
    CircuitBreaker,
    FallbackPolicy,
    ModelOptions,
)
from bastion.core import (
    AgentEvent,
    BadRequest,
    CircuitOpen,
    ConnectionFailed,
    ModelCircuitEvent,
    ModelFellbackEvent,
    ModelTimeout,
    Overloaded,
    StreamInterrupted,
    UserError,
)
from bastion.testing import ScriptedModel, Turn, VirtualClock
from tests.agent.conftest import brief


def outage(n: int) -> list[Turn]:
    return [Turn(error=ConnectionFailed("Could not reach vendor"))] * n


def fallback_agent(
    primary: ScriptedModel,
    backup: ScriptedModel,
    policy: FallbackPolicy,
    *,
    retry: RetryConfig | None = None,
    clock: VirtualClock | None = None,
) -> Agent[Any, str]:
    return Agent(
        "a",
        model=primary,
        retry=retry,
        clock=clock,
        model_options=ModelOptions(fallbacks=[backup], fallback_policy=policy),
    )


async def events_of(agent: Agent[Any, Any], prompt: str = "go") -> list[AgentEvent]:
    return [e async for e in agent.stream(prompt)]


async def test_connection_failures_do_not_fall_back_by_default() -> None:
    primary = ScriptedModel(outage(1), name="primary")
    backup = ScriptedModel(["from backup"], name="backup")
    agent = Agent("a", model=primary, retry=None, model_options=ModelOptions(fallbacks=[backup]))
    result = await agent.run("go")
    assert result.status == "failed"
    assert backup.remaining == 1  # never asked


@pytest.mark.parametrize(
    "error",
    [
        ConnectionFailed("Could not reach vendor"),
        ModelTimeout("did not answer within 5 s"),
        StreamInterrupted("The stream broke mid-way"),
    ],
)
async def test_transport_errors_fall_back_when_the_policy_names_them(error: Exception) -> None:
    # covers issue 12 (ConnectionFailed / ModelTimeout as fallback options)
    primary = ScriptedModel([Turn(error=error)], name="primary")  # pyright: ignore[reportArgumentType]
    backup = ScriptedModel(["from backup"], name="backup")
    agent = fallback_agent(
        primary, backup, FallbackPolicy(on=(*FALLBACK_ERRORS, *TRANSPORT_ERRORS))
    )
    events = await events_of(agent)
    assert brief(events)[:3] == [
        "agent.start",
        "step.start 1",
        "agent.model.fellback test:primary -> test:backup",
    ]
    assert events[-1].type == "agent.end"
    assert events[-1].output == "from backup"


async def test_a_custom_set_can_exclude_the_default_errors() -> None:
    primary = ScriptedModel([Turn(error=Overloaded("busy", status=503))], name="primary")
    backup = ScriptedModel(["from backup"], name="backup")
    result = await fallback_agent(primary, backup, FallbackPolicy(on=TRANSPORT_ERRORS)).run("go")
    assert result.status == "failed"
    assert "Overloaded" in (result.error.message if result.error else "")


async def test_on_fallback_is_called_with_each_transition() -> None:
    # covers issue 12 (on_fallback hook), §3.3 scenario 17 (onFallback called)
    seen: list[ModelFellbackEvent] = []

    async def on_fallback(event: ModelFellbackEvent) -> None:
        seen.append(event)

    first = ScriptedModel([Turn(error=Overloaded("busy", status=503))], name="first")
    second = ScriptedModel([Turn(error=Overloaded("busy", status=529))], name="second")
    third = ScriptedModel(["third answers"], name="third")
    agent = Agent(
        "a",
        model=first,
        retry=None,
        model_options=ModelOptions(
            fallbacks=[second, third], fallback_policy=FallbackPolicy(on_fallback=on_fallback)
        ),
    )
    events = await events_of(agent)
    emitted = [e for e in events if isinstance(e, ModelFellbackEvent)]
    assert seen == emitted
    assert [(e.previous_model, e.next_model, e.reason) for e in seen] == [
        ("test:first", "test:second", "error"),
        ("test:second", "test:third", "error"),
    ]
    assert "Overloaded: busy" in seen[0].error


async def test_a_fatal_error_does_not_fall_back_even_with_transport_errors_on() -> None:
    # covers §3.3 scenario 17 (a fatal error throws immediately)
    primary = ScriptedModel([Turn(error=BadRequest("bad field", status=400))], name="primary")
    backup = ScriptedModel(["from backup"], name="backup")
    policy = FallbackPolicy(on=(*FALLBACK_ERRORS, *TRANSPORT_ERRORS))
    result = await fallback_agent(primary, backup, policy, retry=RetryConfig()).run("go")
    assert result.status == "failed"
    assert backup.remaining == 1


def breaker_agent(
    primary: ScriptedModel, backup: ScriptedModel, breaker: CircuitBreaker, clock: VirtualClock
) -> Agent[Any, str]:
    policy = FallbackPolicy(on=TRANSPORT_ERRORS, circuit_breaker=breaker)
    return fallback_agent(primary, backup, policy, clock=clock)


async def test_an_open_circuit_is_skipped_by_later_runs_until_a_probe_succeeds() -> None:
    # covers issue 12 (circuit breaker per model, shared by runs), §3.3 scenario 17
    clock = VirtualClock()
    breaker = CircuitBreaker(failure_threshold=2, cool_down=30, clock=clock)
    primary = ScriptedModel([*outage(2), "primary is back"], name="primary")
    backup = ScriptedModel(["b1", "b2", "b3"], name="backup")
    agent = breaker_agent(primary, backup, breaker, clock)

    first = await events_of(agent)  # failure 1: falls back, circuit still closed
    assert "agent.model.fellback test:primary -> test:backup" in brief(first)
    assert breaker.state("test:primary") == "closed"

    second = await events_of(agent)  # failure 2: the circuit opens
    circuit = [e for e in second if isinstance(e, ModelCircuitEvent)]
    assert [(e.model, e.state, e.failures, e.cool_down) for e in circuit] == [
        ("test:primary", "open", 2, 30.0)
    ]
    assert breaker.state("test:primary") == "open"

    third = await events_of(agent)  # skipped without a call
    skip = next(e for e in third if isinstance(e, ModelFellbackEvent))
    assert skip.reason == "circuit_open"
    assert primary.remaining == 1  # the third run never called it
    assert third[-1].type == "agent.end"
    assert third[-1].output == "b3"

    clock.advance(30)  # cooled down: the next run probes the primary, which answers
    fourth = await events_of(agent)
    assert fourth[-1].type == "agent.end"
    assert fourth[-1].output == "primary is back"
    closed = [e for e in fourth if isinstance(e, ModelCircuitEvent)]
    assert [(e.model, e.state) for e in closed] == [("test:primary", "closed")]
    assert breaker.state("test:primary") == "closed"


async def test_a_failed_probe_opens_the_circuit_again() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(failure_threshold=1, cool_down=10, clock=clock)
    primary = ScriptedModel(outage(2), name="primary")
    backup = ScriptedModel(["b1", "b2"], name="backup")
    agent = breaker_agent(primary, backup, breaker, clock)
    await agent.run("go")
    assert breaker.state("test:primary") == "open"
    clock.advance(10)
    assert breaker.state("test:primary") == "half_open"
    events = await events_of(agent)
    opened = [e for e in events if isinstance(e, ModelCircuitEvent)]
    assert [e.state for e in opened] == ["open"]
    assert breaker.state("test:primary") == "open"
    assert breaker.retry_in("test:primary") == 10.0


async def test_the_breaker_is_shared_by_agents_given_the_same_object() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(failure_threshold=1, cool_down=60, clock=clock)
    primary = ScriptedModel(outage(1), name="primary")
    one = breaker_agent(primary, ScriptedModel(["b"], name="backup"), breaker, clock)
    await one.run("go")
    other = breaker_agent(primary, ScriptedModel(["other backup"], name="backup"), breaker, clock)
    result = await other.run("go")
    assert result.output == "other backup"
    assert primary.remaining == 0  # asked once, by the first agent only


async def test_an_opening_circuit_stops_retrying_that_model() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(failure_threshold=2, cool_down=60, clock=clock)
    primary = ScriptedModel(outage(5), name="primary")
    backup = ScriptedModel(["b"], name="backup")
    agent = Agent(
        "a",
        model=primary,
        retry=RetryConfig(max_retries=4, jitter=0),
        clock=clock,
        model_options=ModelOptions(
            fallbacks=[backup], fallback_policy=FallbackPolicy(circuit_breaker=breaker)
        ),
    )
    events = await events_of(agent)
    assert brief(events)[:5] == [
        "agent.start",
        "step.start 1",
        "agent.model.retry test:primary #1 0.5",
        "agent.model.circuit",
        "agent.model.fellback test:primary -> test:backup",
    ]
    assert primary.remaining == 3  # two calls, then the open circuit moved the step on


async def test_every_model_open_fails_the_step_with_circuit_open() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(failure_threshold=1, cool_down=45, clock=clock)
    breaker.record_failure("test:primary", ConnectionFailed("down"))
    clock.advance(5)
    breaker.record_failure("test:backup", ConnectionFailed("down"))
    primary = ScriptedModel(["p"], name="primary")
    backup = ScriptedModel(["b"], name="backup")
    result = await breaker_agent(primary, backup, breaker, clock).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert "CircuitOpen" in result.error.message
    assert "'test:primary' (40 s)" in result.error.message
    assert primary.remaining == backup.remaining == 1


async def test_errors_about_the_request_do_not_count_toward_opening() -> None:
    clock = VirtualClock()
    breaker = CircuitBreaker(failure_threshold=1, clock=clock)
    primary = ScriptedModel([Turn(error=BadRequest("bad", status=400))], name="primary")
    await breaker_agent(primary, ScriptedModel(["b"]), breaker, clock).run("go")
    assert breaker.state("test:primary") == "closed"
    assert breaker.failures("test:primary") == 0


def test_circuit_open_names_the_wait() -> None:
    error = CircuitOpen("all open", retry_after=3.0)
    assert error.retry_after == 3.0
    assert not error.retryable


@pytest.mark.parametrize(
    ("kwargs", "match"),
    [
        ({"failure_threshold": 0}, "failure_threshold must be >= 1"),
        ({"failure_threshold": 1.5}, "failure_threshold must be an int"),
        ({"cool_down": -1}, "cool_down must be >= 0"),
        ({"counts": ()}, "counts must be a non-empty tuple"),
        ({"counts": ("RateLimited",)}, "must hold exception classes"),
    ],
)
def test_bad_breaker_settings_are_user_errors(kwargs: dict[str, Any], match: str) -> None:
    with pytest.raises(UserError, match=match):
        CircuitBreaker(**kwargs)


def test_bad_policy_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"FallbackPolicy\.on must hold exception classes"):
        FallbackPolicy(on=(ConnectionFailed, "ModelTimeout"))  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="on_fallback must be callable"):
        FallbackPolicy(on_fallback="log")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="fallback_policy must be a FallbackPolicy"):
        Agent(
            "a",
            model=ScriptedModel([]),
            model_options=ModelOptions(fallback_policy=TRANSPORT_ERRORS),  # pyright: ignore[reportArgumentType]
        )
