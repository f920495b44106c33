"""Trajectory assertions: tool calls with argument matchers, modes, sub-agents, messages."""

from __future__ import annotations

import pytest

from bastion import Agent, tool
from bastion.core import AgentEvent, UserError
from bastion.multi import as_tool
from bastion.testing import (
    ANY,
    Call,
    ScriptedModel,
    ToolStep,
    Turn,
    assert_trajectory,
    call,
    contains,
    final,
    regex,
    trajectory,
    where,
)
from bastion.tools import Tool


@tool(side_effect_class="read_only")
def search(query: str, limit: int = 3) -> str:
    """Search hotels."""
    return f"{limit} hotels for {query}"


@tool(side_effect_class="side_effecting")
def book(hotel: str, nights: int) -> str:
    """Book a hotel."""
    if nights < 1:
        raise ValueError("nights must be at least 1")
    return f"booking confirmed at {hotel}"


def _agent(turns: list[Turn | str], tools: list[Tool] | None = None) -> Agent[None, str]:
    return Agent("travel", model=ScriptedModel(turns), tools=tools or [search, book])


def _booking() -> Agent[None, str]:
    return _agent(
        [
            Turn(tool_calls=[Call("search", {"query": "Paris hotels", "limit": 5})]),
            Turn(tool_calls=[Call("book", {"hotel": "Lutetia", "nights": 2})]),
            "I booked the Lutetia for two nights.",
        ]
    )


async def _events(agent: Agent[None, str], prompt: str = "Book me a hotel") -> list[AgentEvent]:
    return [e async for e in agent.stream(prompt)]


async def test_trajectory_matches_calls_with_argument_matchers() -> None:
    events = await _events(_booking())
    steps = assert_trajectory(
        events,
        [
            call("search", query=contains("paris", ignore_case=True), limit=ANY),
            call("book", hotel=regex(r"^Lut"), nights=where(lambda n: n > 1, "more than 1")),
            final(contains("booked")),
        ],
    )
    assert steps[0] == ToolStep(
        name="search",
        arguments={"query": "Paris hotels", "limit": 5},
        result="5 hotels for Paris hotels",
    )


async def test_a_result_gives_the_same_trajectory_as_its_events() -> None:
    agent = _booking()
    result = await agent.run("Book me a hotel")
    assert trajectory(result) == trajectory(await _events(_booking()))
    assert_trajectory(
        result, [call("search"), call("book").returns(contains("confirmed")), final()]
    )


async def test_a_wrong_argument_fails_with_both_trajectories_shown() -> None:
    events = await _events(_booking())
    with pytest.raises(AssertionError) as failure:
        assert_trajectory(events, [call("search", query=contains("Rome")), call("book"), final()])
    message = str(failure.value)
    assert "step 1: arguments: expected contains('Rome') at query, got 'Paris hotels'" in message
    assert (
        "expected:\n  1. call search(query=contains('Rome'))\n  2. call book()\n  3. final(ANY)"
        in message
    )
    assert (
        "actual:\n  1. search(query='Paris hotels', limit=5) -> '5 hotels for Paris hotels'"
        in message
    )
    assert "  3. final 'I booked the Lutetia for two nights.' (completed)" in message


async def test_exact_mode_reports_a_missing_or_an_extra_step() -> None:
    events = await _events(_booking())
    with pytest.raises(AssertionError, match=r"2 step\(s\) expected, 3 made; unexpected: final"):
        assert_trajectory(events, [call("search"), call("book")])
    with pytest.raises(AssertionError, match=r"step 2: tool name: expected 'pay', got 'book'"):
        assert_trajectory(events, [call("search"), call("pay"), final()])


async def test_ordered_unordered_and_subset_modes() -> None:
    events = await _events(_booking())
    assert_trajectory(events, [call("book"), final()], mode="ordered")
    with pytest.raises(AssertionError, match=r"expected step 2 \(call search\(\)\) was not made"):
        assert_trajectory(events, [call("book"), call("search")], mode="ordered")
    assert_trajectory(events, [final(), call("book"), call("search")], mode="unordered")
    with pytest.raises(AssertionError, match=r"2 step\(s\) expected, 3 made"):
        assert_trajectory(events, [call("book"), call("search")], mode="unordered")
    assert_trajectory(events, [call("book"), call("search")], mode="subset")
    with pytest.raises(AssertionError, match=r"no step matches call search\(\); call search\(\)"):
        assert_trajectory(events, [call("search"), call("search"), call("search")], mode="subset")


async def test_no_other_args_and_failed_calls() -> None:
    events = await _events(
        _agent([Turn(tool_calls=[Call("book", {"hotel": "Ritz", "nights": 0})]), "Sorry."])
    )
    assert_trajectory(events, [call("book", hotel="Ritz").fails(contains("at least 1")), final()])
    with pytest.raises(AssertionError, match="arguments: unexpected nights"):
        assert_trajectory(events, [call("book", hotel="Ritz").no_other_args(), final()])
    with pytest.raises(AssertionError, match="step 1: the call failed"):
        assert_trajectory(events, [call("book").returns(ANY), final()])


async def test_calls_inside_a_sub_agent_are_captured() -> None:
    researcher = Agent(
        "researcher",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("search", {"query": "Lyon"})]), "Lyon: 3 hotels"]
        ),
        tools=[search],
        description="Finds hotels.",
    )
    parent = _agent(
        [Turn(tool_calls=[Call("researcher", {"input": "hotels in Lyon"})]), "Found 3."],
        [as_tool(researcher)],
    )
    events = await _events(parent)
    assert_trajectory(
        events,
        [
            call("researcher", input=contains("Lyon")).returns("Lyon: 3 hotels"),
            call("search", query="Lyon").in_agent("researcher"),
            final("Found 3."),
        ],
    )
    assert_trajectory(events, [call("researcher"), final()], subagents=False)
    with pytest.raises(AssertionError, match="sub-agent: expected 'planner', got 'researcher'"):
        assert_trajectory(events, [call("researcher"), call("search").in_agent("planner"), final()])
    assert "  2. [researcher] search(query='Lyon')" in _message(events)


def _message(events: list[AgentEvent]) -> str:
    with pytest.raises(AssertionError) as failure:
        assert_trajectory(events, [])
    return str(failure.value)


def test_invalid_mode_or_step_is_a_user_error() -> None:
    with pytest.raises(UserError, match="mode='strict'"):
        assert_trajectory([], [], mode="strict")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"call\(\.\.\.\) or final\(\.\.\.\)"):
        assert_trajectory([], ["search"])  # type: ignore[list-item]
