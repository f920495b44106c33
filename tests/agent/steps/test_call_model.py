"""Retries with backoff and fallback models (A-26, A-27, G-65..G-68, SPEC §3.1 scenario 14)."""

from __future__ import annotations

import pytest

from bastion import Agent, RetryConfig
from bastion.agent import ModelOptions
from bastion.core import (
    AuthenticationFailed,
    BadRequest,
    ConnectionFailed,
    ContentFiltered,
    ContextLengthExceeded,
    MalformedResponse,
    ModelError,
    ModelTimeout,
    Overloaded,
    RateLimited,
)
from bastion.testing import ScriptedModel, Turn, VirtualClock
from tests.agent.conftest import brief


async def test_fallback_on_rate_limit_emits_fellback_and_attributes_usage() -> None:
    # covers G-65, G-66, G-67
    clock = VirtualClock()
    primary = ScriptedModel(
        [Turn(error=RateLimited("slow down", status=429, retry_after=2.0))] * 2, name="primary"
    )
    backup = ScriptedModel(["from backup"], name="backup")
    agent = Agent(
        "a",
        model=primary,
        retry=RetryConfig(max_retries=1),
        clock=clock,
        model_options=ModelOptions(fallbacks=[backup]),
    )
    events = [e async for e in agent.stream("go")]
    assert brief(events) == [
        "agent.start",
        "step.start 1",
        "agent.model.retry test:primary #1 2.0",
        "agent.model.fellback test:primary -> test:backup",
        "text.delta 'from '",
        "text.delta 'backup'",
        "text.complete",
        "step.end 1 stop",
        "agent.end completed",
    ]
    assert clock.sleeps == [2.0]  # Retry-After honoured, no real sleeping
    step_end = next(e for e in events if e.type == "step.end")
    assert step_end.model == "test:backup"
    result = (
        await Agent("b", model=backup, model_options=ModelOptions(fallbacks=[])).run("x")
        if backup.remaining
        else None
    )
    assert result is None
    end = events[-1]
    assert end.type == "agent.end"
    assert end.output == "from backup"


async def test_usage_by_model_sums_per_model() -> None:
    # covers G-68, D3
    primary = ScriptedModel([Turn(error=Overloaded("busy", status=529))], name="primary")
    backup = ScriptedModel(["ok"], name="backup")
    result = await Agent(
        "a", model=primary, retry=None, model_options=ModelOptions(fallbacks=[backup])
    ).run("go")
    assert list(result.usage_by_model) == ["test:backup"]
    assert result.usage_by_model["test:backup"] == result.usage


async def test_context_length_falls_back_without_retrying() -> None:
    # covers C11 (context length eligible at agent level)
    clock = VirtualClock()
    primary = ScriptedModel(
        [Turn(error=ContextLengthExceeded("too long", status=400))], name="small"
    )
    backup = ScriptedModel(["fits"], name="large")
    agent = Agent("a", model=primary, clock=clock, model_options=ModelOptions(fallbacks=[backup]))
    result = await agent.run("go")
    assert result.output == "fits"
    assert clock.sleeps == []


async def test_auth_errors_do_not_fall_back() -> None:
    # covers SPEC §3.1 scenario 14 (auth / invalid input do not trigger fallback), scenario 4
    primary = ScriptedModel([Turn(error=AuthenticationFailed("bad key", status=401))], name="p")
    backup = ScriptedModel(["never"], name="b")
    result = await Agent("a", model=primary, model_options=ModelOptions(fallbacks=[backup])).run(
        "go"
    )
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "model_error"
    assert "bad key" in result.error.message
    assert backup.requests == []


async def test_transient_errors_retry_with_exponential_backoff() -> None:
    # covers, SPEC §3.3 scenario 16
    clock = VirtualClock()
    model = ScriptedModel([Turn(error=Overloaded("503", status=503))] * 3 + ["finally"])
    agent = Agent("a", model=model, retry=RetryConfig(jitter=0.0), clock=clock)
    result = await agent.run("go")
    assert result.output == "finally"
    assert clock.sleeps == [0.5, 1.0, 2.0]


async def test_retries_give_up_after_max_retries() -> None:
    #
    clock = VirtualClock()
    model = ScriptedModel([Turn(error=RateLimited("429", status=429))] * 4)
    agent = Agent(
        "a", model=model, retry=RetryConfig(max_retries=3, jitter=0.0, max_delay=1.0), clock=clock
    )
    result = await agent.run("go")
    assert result.status == "failed"
    assert clock.sleeps == [0.5, 1.0, 1.0]  # capped at max_delay
    assert len(model.requests) == 4


async def test_bad_request_is_not_retried() -> None:
    # covers A-27 (a 400 is not retried)
    clock = VirtualClock()
    model = ScriptedModel([Turn(error=BadRequest("malformed", status=400)), "unused"])
    result = await Agent("a", model=model, clock=clock).run("go")
    assert result.status == "failed"
    assert clock.sleeps == []
    assert len(model.requests) == 1


async def test_a_stream_that_already_emitted_is_not_restarted() -> None:
    # covers C11 (stream restarts only before the first emitted event), SPEC §3.1 scenario 43
    clock = VirtualClock()
    broken = Turn(text="partial answer", error=Overloaded("dropped", status=502), error_after=1)
    model = ScriptedModel([broken, "unused"], name="p")
    backup = ScriptedModel(["unused"], name="b")
    agent = Agent("a", model=model, clock=clock, model_options=ModelOptions(fallbacks=[backup]))
    events = [e async for e in agent.stream("go")]
    assert brief(events) == [
        "agent.start",
        "step.start 1",
        "text.delta 'partial '",
        "agent.error model_error",
        "agent.end failed",
    ]
    assert clock.sleeps == []
    assert backup.requests == []


@pytest.mark.parametrize(
    ("error", "retried", "falls_back"),
    [
        (RateLimited("429", status=429), True, True),
        (Overloaded("529", status=529), True, True),
        (ModelTimeout("slow"), True, False),
        (ConnectionFailed("reset"), True, False),
        (MalformedResponse("garbage"), True, False),
        (ContextLengthExceeded("too long", status=400), False, True),
        (AuthenticationFailed("401", status=401), False, False),
        (BadRequest("400", status=400), False, False),
        (ContentFiltered("policy", status=400), False, False),
    ],
)
async def test_each_error_class_drives_retry_and_fallback(
    error: ModelError, retried: bool, falls_back: bool
) -> None:
    # covers issue 3 (the taxonomy drives retry and fallback), A-27, G-65, C11
    clock = VirtualClock()
    primary = ScriptedModel([Turn(error=error)] * 2, name="primary")
    backup = ScriptedModel(["backup answered"], name="backup")
    agent = Agent(
        "a",
        model=primary,
        retry=RetryConfig(max_retries=1, jitter=0.0),
        clock=clock,
        model_options=ModelOptions(fallbacks=[backup]),
    )
    result = await agent.run("go")
    assert len(primary.requests) == (2 if retried else 1)
    assert len(clock.sleeps) == (1 if retried else 0)
    if falls_back:
        assert result.output == "backup answered"
    else:
        assert result.status == "failed"
        assert backup.requests == []


async def test_secret_tool_output_never_reaches_a_model_that_refuses_secrets() -> None:
    # covers G-08, G-10: the refusing model is not called; the step falls back to one that accepts
    from bastion import tool
    from bastion.testing import Call

    @tool(side_effect_class="read_only", sensitivity="secret")
    def read_vault() -> str:
        """Read a secret."""
        return "s3cr3t"

    public_only = ScriptedModel(
        [Turn(tool_calls=[Call("read_vault")]), "never sent"], name="public-only"
    )
    public_only.accepts_sensitivity = ("public", "internal")
    trusted = ScriptedModel(["summarised without leaking"], name="trusted")
    agent = Agent(
        "a", model=public_only, tools=[read_vault], model_options=ModelOptions(fallbacks=[trusted])
    )
    events = [e async for e in agent.stream("go")]
    assert len(public_only.requests) == 1  # the first step only: no secret in it yet
    assert "agent.model.fellback test:public-only -> test:trusted" in brief(events)
    assert events[-1].type == "agent.end"
    assert events[-1].output == "summarised without leaking"
    assert trusted.requests[0].messages[-1].sensitivity == "secret"  # type: ignore[union-attr]


async def test_without_an_accepting_model_the_run_fails_clearly() -> None:
    # covers G-08
    from bastion import tool
    from bastion.testing import Call

    @tool(side_effect_class="read_only", sensitivity="secret")
    def read_vault() -> str:
        """Read a secret."""
        return "s3cr3t"

    model = ScriptedModel([Turn(tool_calls=[Call("read_vault")]), "never sent"])
    model.accepts_sensitivity = ("public",)
    result = await Agent("a", model=model, tools=[read_vault]).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert "does not accept 'secret' data" in result.error.message
    assert len(model.requests) == 1


@pytest.mark.parametrize(("retention", "kept"), [("keep", True), ("strip", False)])
async def test_reasoning_retention_keeps_or_strips_reasoning_on_the_next_step(
    retention: str, kept: bool
) -> None:
    # covers G-63, C16 (retention keep | strip)
    from bastion import tool
    from bastion.testing import Call

    @tool(side_effect_class="pure")
    def noop() -> str:
        """Nothing."""
        return ""

    model = ScriptedModel(
        [Turn(reasoning="plan", reasoning_signature="sig", tool_calls=[Call("noop")]), "done"]
    )
    agent = Agent(
        "a",
        model=model,
        tools=[noop],
        model_options=ModelOptions(reasoning_retention=retention),  # pyright: ignore[reportArgumentType]
    )
    result = await agent.run("go")
    previous = model.requests[1].messages[-2]
    assert previous.role == "assistant"
    assert any(p.type == "reasoning" for p in previous.parts) is kept
    first_answer = next(m for m in result.messages if m.role == "assistant")
    assert any(p.type == "reasoning" for p in first_answer.parts)  # the transcript keeps it
