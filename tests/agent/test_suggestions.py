"""Follow-up suggestions after a completed run: off by default, governed, counted."""

from __future__ import annotations

import pytest

from bastion import Agent, GovernanceOptions
from bastion.agent import RunOptions
from bastion.context import Suggestions, parse_suggestions
from bastion.core import SystemMessage, UserError, UserMessage
from bastion.events import AgentSuggestionsEvent
from bastion.governance import PolicyAction, PolicyResult, deny
from bastion.testing import ScriptedModel


async def test_off_by_default() -> None:
    agent = Agent("helper", model=ScriptedModel(["Sunny."]))
    events = [e.type async for e in agent.stream("Weather?")]
    assert "agent.suggestions" not in events
    assert (
        await Agent("helper", model=ScriptedModel(["Sunny."])).run("Weather?")
    ).suggestions == []


async def test_suggestions_come_as_an_event_and_on_the_result() -> None:
    #
    writer = ScriptedModel(["1. Will it rain?\n- And tomorrow?\n\nA third one"], name="writer")
    agent = Agent(
        "helper",
        model=ScriptedModel(["Sunny."]),
        instructions="Talk about weather.",
        run_options=RunOptions(suggestions=Suggestions(count=2, model=writer)),
    )
    stream = agent.stream("Weather?")
    events = [e async for e in stream]
    types = [e.type for e in events]
    assert types[-2:] == ["agent.suggestions", "agent.end"]
    suggested = events[-2]
    assert isinstance(suggested, AgentSuggestionsEvent)
    assert suggested.suggestions == ["Will it rain?", "And tomorrow?"]
    result = stream.result
    assert result.suggestions == ["Will it rain?", "And tomorrow?"]
    assert result.output == "Sunny."
    assert writer.key in result.usage_by_model  # counted in the run's usage
    assert result.usage.requests == 2
    request = writer.requests[0]
    system, user = request.messages
    assert isinstance(system, SystemMessage)
    assert "exactly 2" in system.content
    assert isinstance(user, UserMessage)
    assert user.text == "[user] Weather?\n[assistant] Sunny."


async def test_a_denied_suggestion_call_leaves_the_run_completed() -> None:
    def no_suggestions(action: PolicyAction) -> PolicyResult:
        return deny("no-suggestions: not here")

    writer = ScriptedModel(["never"], name="writer")
    agent = Agent(
        "helper",
        model=ScriptedModel(["Sunny."]),
        governance=GovernanceOptions(oracles={"llm:test:writer": [no_suggestions]}),
        run_options=RunOptions(suggestions=Suggestions(model=writer)),
    )
    stream = agent.stream("Weather?")
    events = [e async for e in stream]
    suggested = [e for e in events if isinstance(e, AgentSuggestionsEvent)]
    assert len(suggested) == 1
    assert suggested[0].suggestions == []
    assert suggested[0].error is not None
    assert "no-suggestions" in suggested[0].error
    assert writer.requests == []
    assert stream.result.status == "completed"
    assert stream.result.suggestions == []


def test_bad_settings_are_user_errors() -> None:
    with pytest.raises(UserError, match="count=0"):
        Suggestions(count=0)
    with pytest.raises(UserError, match="must be a Suggestions"):
        Agent("helper", model=ScriptedModel([]), run_options=RunOptions(suggestions=3))  # pyright: ignore[reportArgumentType]
    assert parse_suggestions("* a\n2) b\n\n c ", 5) == ["a", "b", "c"]
