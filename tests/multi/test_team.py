"""``Team``: route, broadcast and collaborate (agentium §3.3 scenario 19)."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent
from bastion.core import ModelRequest, Overloaded, Usage, UserError, UserMessage
from bastion.multi import FanOutChild, Team, fan_out
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn


def member(name: str, *script: str | Turn, description: str = "") -> Agent[Any, Any]:
    return Agent(
        name, model=ScriptedModel(list(script), name=name), description=description, retry=None
    )


def used(tokens: int) -> Usage:
    return Usage(prompt_tokens=tokens, completion_tokens=0, requests=1)


def prompt_of(request: ModelRequest) -> str:
    last = request.messages[-1]
    assert isinstance(last, UserMessage)
    assert isinstance(last.content, str)
    return last.content


async def test_route_runs_the_member_the_model_names_case_insensitively() -> None:
    # covers §3.3 scenario 19 (route, case-insensitive)
    billing = member("Billing", Turn(text="Refund issued.", usage=used(30)), description="Money.")
    tech = member("Tech", "never", description="Bugs.")
    router = ScriptedModel([Turn(text="billing", usage=used(7))])
    team = Team("support", members=[tech, billing], mode="route", model=router)
    async with team.stream("I was charged twice.") as run:
        kinds = [event.type async for event in run]
    result = run.result
    assert kinds == ["agent.start", "text.complete", "agent.end"]
    assert result.status == "completed"
    assert result.output == "Refund issued."
    assert result.state is not None
    assert result.state.metadata["bastion.team_route"] == "Billing"
    assert result.usage.total_tokens == 37  # router and member
    assert "- Billing: Money." in prompt_of(router.requests[0])
    assert "I was charged twice." in prompt_of(router.requests[0])


async def test_route_to_an_unknown_member_goes_to_the_fallback() -> None:
    # covers §3.3 scenario 19 (unknown member: fallback)
    first = member("first", "never")
    general = member("general", "I can help with that.")
    team = Team(
        "desk",
        members=[first, general],
        model=ScriptedModel(["Nobody fits"]),
        fallback="general",
    )
    result = await team.run("Something odd")
    assert result.output == "I can help with that."


async def test_route_finds_a_member_named_inside_a_sentence() -> None:
    team = Team(
        "desk",
        members=[member("tech", "fixed"), member("billing", "never")],
        model=ScriptedModel(["The best member is Tech."]),
    )
    assert (await team.run("crash")).output == "fixed"


async def test_broadcast_runs_every_member_and_synthesises() -> None:
    # covers §3.3 scenario 19 (broadcast: all members concurrently, then a synthesis)
    synth_prompts: list[str] = []

    def synthesise(request: ModelRequest) -> Turn:
        synth_prompts.append(prompt_of(request))
        return Turn(text="Both agree: ship it.", usage=used(5))

    team = Team(
        "review",
        members=[
            member("a", Turn(text="ship", usage=used(10))),
            member("b", Turn(text="ship it", usage=used(20))),
        ],
        mode="broadcast",
        model=FunctionModel(synthesise),
    )
    result = await team.run("Ship the patch?")
    assert result.output == "Both agree: ship it."
    assert result.usage.total_tokens == 35
    assert '<candidate n="1">\nship\n</candidate>' in synth_prompts[0]
    assert "The task: Ship the patch?" in synth_prompts[0]


async def test_collaborate_stops_at_consensus() -> None:
    # covers §3.3 scenario 19 (collaborate: consensus)
    a = member("a", "42", "42")
    b = member("b", "41", " 42 ")
    team = Team("pair", members=[a, b], mode="collaborate", model=ScriptedModel([]), max_rounds=5)
    result = await team.run("What is 6 x 7?")
    assert result.output == "42"
    assert result.state is not None
    assert result.state.metadata["bastion.team_rounds"] == 2
    assert result.state.metadata["bastion.team_consensus"] is True
    b_model = b.config.model
    assert isinstance(b_model, ScriptedModel)
    assert "- a: 42" in prompt_of(b_model.requests[1])  # round 2 sees round 1's answers


async def test_collaborate_stops_after_max_rounds_and_synthesises() -> None:
    # covers §3.3 scenario 19 (collaborate: max_rounds)
    a = member("a", "yes", "yes", "never")
    b = member("b", "no", "no", "never")
    team = Team(
        "pair",
        members=[a, b],
        mode="collaborate",
        model=ScriptedModel(["They disagree."]),
        max_rounds=2,
    )
    result = await team.run("Deploy?")
    assert result.output == "They disagree."
    assert result.state is not None
    assert result.state.metadata["bastion.team_consensus"] is False


async def test_a_failing_member_fails_the_routed_team_run() -> None:
    team = Team(
        "desk", members=[member("x", Turn(error=Overloaded("down")))], model=ScriptedModel(["x"])
    )
    async with team.stream("hi") as run:
        kinds = [event.type async for event in run]
    assert kinds == ["agent.start", "agent.error", "agent.end"]
    assert run.result.status == "failed"


async def test_a_team_is_a_fan_out_child_and_a_tool() -> None:
    team = Team("desk", members=[member("x", "from x", "again")], model=ScriptedModel(["x", "x"]))
    lead = Agent(
        "lead",
        model=ScriptedModel([Turn(tool_calls=[Call("desk", {"input": "go"})]), "done"]),
        tools=[team.as_tool()],
    )
    result = await lead.run("start")
    assert result.tool_calls[0].result == "from x"
    fan = await fan_out(lead, [FanOutChild(team, "go")])
    assert fan.output == "again"


def test_bad_team_configurations_are_refused() -> None:
    m = member("m", "x")
    with pytest.raises(UserError, match="mode='vote'"):
        Team("t", members=[m], model=ScriptedModel([]), mode="vote")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="at least one member"):
        Team("t", members=[], model=ScriptedModel([]))
    with pytest.raises(UserError, match="member names must be unique"):
        Team("t", members=[m, m], model=ScriptedModel([]))
    with pytest.raises(UserError, match="fallback 'z' is not a member"):
        Team("t", members=[m], model=ScriptedModel([]), fallback="z")
    with pytest.raises(UserError, match="max_rounds must be an int >= 1"):
        Team("t", members=[m], model=ScriptedModel([]), max_rounds=0)
