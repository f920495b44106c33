"""Transparent retry of rate-limited tools that may safely run again."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, RunContext, ToolOptions, ToolRetry, tool
from bastion.core import RateLimited, UserError
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import ToolRateLimited
from tests.agent.conftest import brief


def one_call(name: str, args: dict[str, Any] | None = None) -> ScriptedModel:
    return ScriptedModel([Turn(tool_calls=[Call(name, args or {}, id="c1")]), "done"])


async def test_scenario_39_a_rate_limited_pure_tool_is_retried_with_backoff() -> None:
    # covers §3.1 scenario 39 (pure tool: up to 3 attempts, transparently)
    attempts: list[int] = []

    @tool(side_effect_class="pure")
    def quote(symbol: str) -> str:
        """Price of a symbol."""
        attempts.append(1)
        if len(attempts) < 3:
            raise ToolRateLimited("quota: 1 call per second")
        return f"{symbol}: 42"

    clock = VirtualClock()
    agent = Agent("a", model=one_call("quote", {"symbol": "ACME"}), tools=[quote], clock=clock)
    events = [e async for e in agent.stream("price?")]
    assert brief(events)[5:10] == [
        "tool.execute.start quote#c1",
        "tool.execute.retry",
        "tool.execute.retry",
        "tool.execute.end quote#c1",
        "step.end 1 tool_calls",
    ]
    retries = [e for e in events if e.type == "tool.execute.retry"]
    assert [(e.attempt, e.delay, e.error) for e in retries] == [
        (2, 0.25, "ToolRateLimited: quota: 1 call per second"),
        (3, 0.5, "ToolRateLimited: quota: 1 call per second"),
    ]
    assert clock.sleeps == [0.25, 0.5]  # exponential backoff on the run's clock
    end = next(e for e in events if e.type == "tool.execute.end")
    assert end.result == "ACME: 42"
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_scenario_39_attempts_are_capped_then_the_model_reads_the_error() -> None:
    # covers §3.1 scenario 39 (at most 3 attempts)
    attempts: list[int] = []

    @tool(side_effect_class="read_only")
    def search(q: str) -> str:
        """Search."""
        attempts.append(1)
        raise ToolRateLimited("too many searches", retry_after=2.0)

    clock = VirtualClock()
    agent = Agent("a", model=one_call("search", {"q": "x"}), tools=[search], clock=clock)
    result = await agent.run("go")
    assert len(attempts) == 3
    assert clock.sleeps == [2.0, 2.0]  # the backend's retry_after beats the shorter backoff
    (record,) = result.tool_calls
    assert (record.is_error, record.error_kind, record.result) == (
        True,
        "rate_limited",
        "too many searches",
    )
    assert result.status == "completed"


async def test_scenario_39_a_side_effecting_tool_without_key_is_never_retried() -> None:
    # covers §3.1 scenario 39 (side-effecting without idempotencyKey: never retried)
    sent: list[str] = []

    @tool(side_effect_class="side_effecting")
    def send(to: str) -> str:
        """Send a message."""
        sent.append(to)
        raise ToolRateLimited("mail server busy")

    clock = VirtualClock()
    agent = Agent("a", model=one_call("send", {"to": "bob"}), tools=[send], clock=clock)
    events = [e async for e in agent.stream("go")]
    assert sent == ["bob"]
    assert "tool.execute.retry" not in brief(events)
    assert "tool.execute.error send#c1 rate_limited" in brief(events)
    assert clock.sleeps == []


async def test_an_idempotent_side_effecting_tool_is_retried_with_the_same_key() -> None:
    # covers §3.1 scenario 39 (idempotent tools retry, with the same key)
    keys: list[str | None] = []

    @tool(side_effect_class="side_effecting", idempotency_key=lambda a: f"pay-{a['to']}")
    def pay(ctx: RunContext[Any], to: str) -> str:
        """Pay someone."""
        keys.append(ctx.idempotency_key)
        if len(keys) == 1:
            raise RateLimited("bank API: 429", status=429)
        return "paid"

    agent = Agent("a", model=one_call("pay", {"to": "bob"}), tools=[pay], clock=VirtualClock())
    events = [e async for e in agent.stream("go")]
    assert keys == ["pay-bob", "pay-bob"]
    retry = next(e for e in events if e.type == "tool.execute.retry")
    assert (retry.tool_name, retry.attempt) == ("pay", 2)
    assert brief(events).index("tool.execute.retry") < brief(events).index(
        "tool.execute.end pay#c1"
    )


async def test_retries_of_parallel_calls_and_other_errors() -> None:
    # covers §3.1 scenario 39 (only rate limits are retried; parallel calls report live)
    calls: dict[str, int] = {"a": 0, "b": 0}

    @tool(side_effect_class="pure")
    def fetch(key: str) -> str:
        """Fetch a key."""
        calls[key] += 1
        if key == "a" and calls[key] == 1:
            raise ToolRateLimited("slow down")
        if key == "b":
            raise ValueError("no such key")
        return f"value of {key}"

    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("fetch", {"key": "a"}, id="a"),
                    Call("fetch", {"key": "b"}, id="b"),
                ]
            ),
            "done",
        ]
    )
    clock = VirtualClock()
    events = [e async for e in Agent("x", model=model, tools=[fetch], clock=clock).stream("go")]
    assert calls == {"a": 2, "b": 1}  # a plain failure is not retried
    assert [(e.tool_call_id, e.attempt) for e in events if e.type == "tool.execute.retry"] == [
        ("a", 2)
    ]
    assert "tool.execute.end fetch#a" in brief(events)
    assert "tool.execute.error fetch#b execution_failed" in brief(events)
    assert [e.seq for e in events] == list(range(1, len(events) + 1))


async def test_tool_retry_is_configurable() -> None:
    # covers §3.1 scenario 39 (configurable attempts; None turns retrying off)
    attempts: list[int] = []

    @tool(side_effect_class="pure")
    def flaky() -> str:
        """Always rate-limited."""
        attempts.append(1)
        raise ToolRateLimited("busy")

    clock = VirtualClock()
    agent = Agent(
        "a",
        model=one_call("flaky"),
        tools=[flaky],
        clock=clock,
        tool_options=ToolOptions(retry=ToolRetry(attempts=5, base_delay=1.0, max_delay=3.0)),
    )
    await agent.run("go")
    assert len(attempts) == 5
    assert clock.sleeps == [1.0, 2.0, 3.0, 3.0]
    attempts.clear()
    off = Agent(
        "b",
        model=one_call("flaky"),
        tools=[flaky],
        clock=VirtualClock(),
        tool_options=ToolOptions(retry=None),
    )
    await off.run("go")
    assert len(attempts) == 1
    with pytest.raises(UserError, match="attempts must be an int >= 1"):
        ToolRetry(attempts=0)
    with pytest.raises(UserError, match="retry must be a ToolRetry"):
        Agent("c", model=ScriptedModel([]), tool_options=ToolOptions(retry=3))  # pyright: ignore[reportArgumentType]
