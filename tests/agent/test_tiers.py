"""Which model a step uses: tool tier hints, the tier map, prepare_step (SPEC G-83..G-85, T-25)."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, RunContext, tool
from bastion.agent import LoopHooks, ModelOptions
from bastion.core import Model, RateLimited, UserError
from bastion.providers import register_provider
from bastion.testing import Call, ScriptedModel, Turn


def models() -> dict[str, ScriptedModel]:
    return {
        "default": ScriptedModel(
            [Turn(tool_calls=[Call("think_hard")]), "d2", "d3"], name="default"
        ),
        "fast": ScriptedModel(["fast answer"] * 3, name="fast"),
        "smart": ScriptedModel(["smart answer"] * 3, name="smart"),
    }


@tool(side_effect_class="pure", preferred_model="smart")
def think_hard() -> str:
    """A tool whose result needs a strong model to read."""
    return "a dense result"


@tool(side_effect_class="pure", preferred_model="fast")
def quick_lookup() -> str:
    """A tool whose result any model can read."""
    return "a simple result"


async def test_a_tool_hint_picks_the_next_steps_model_through_the_tier_map() -> None:
    # covers G-83, G-84
    m = models()
    agent = Agent(
        "a",
        model=m["default"],
        tools=[think_hard],
        model_options=ModelOptions(tiers={"fast": m["fast"], "smart": m["smart"]}),
    )
    events = [e async for e in agent.stream("go")]
    starts = [e.model for e in events if e.type == "step.start"]
    assert starts == ["test:default", "test:smart"]
    result = await Agent(
        "b", model=ScriptedModel(["x"]), model_options=ModelOptions(tiers={"fast": m["fast"]})
    ).run("go")
    assert result.output == "x"  # no hint: the default model
    assert events[-1].type == "agent.end"
    assert events[-1].output == "smart answer"


async def test_the_strongest_tier_wins_and_an_explicit_spec_beats_tiers() -> None:
    # covers G-85, T-25 (explicit spec beats tier)
    explicit = ScriptedModel(["explicit answer"], name="explicit")

    def factory(name: str, **_: object) -> ScriptedModel:
        return explicit

    register_provider("tier-test", factory, replace=True)

    @tool(side_effect_class="pure", preferred_model="tier-test:pinned")
    def pinned() -> str:
        """A tool that wants one specific model."""
        return "pinned"

    m = models()
    both = ScriptedModel([Turn(tool_calls=[Call("quick_lookup"), Call("think_hard")])], name="d")
    agent = Agent(
        "a",
        model=both,
        tools=[quick_lookup, think_hard],
        model_options=ModelOptions(tiers={"fast": m["fast"], "smart": m["smart"]}),
    )
    assert (await agent.run("go")).output == "smart answer"
    three = ScriptedModel([Turn(tool_calls=[Call("think_hard"), Call("pinned")])], name="d")
    agent = Agent(
        "b",
        model=three,
        tools=[think_hard, pinned],
        model_options=ModelOptions(tiers={"smart": m["smart"]}),
    )
    assert (await agent.run("go")).output == "explicit answer"


async def test_prepare_step_beats_every_other_preference_and_agent_preference_beats_default() -> (
    None
):
    # covers G-85 (prepare-step > tier-map | spec > agent-preferred > default)
    m = models()

    class Pin(LoopHooks):
        def prepare_step(self, ctx: RunContext[Any], step: int) -> Model | None:
            return m["fast"] if step == 2 else None

    agent = Agent(
        "a",
        model=m["default"],
        tools=[think_hard],
        hooks=Pin(),
        model_options=ModelOptions(tiers={"fast": m["fast"], "smart": m["smart"]}),
    )
    assert (await agent.run("go")).output == "fast answer"
    preferring = Agent(
        "b",
        model=ScriptedModel(["unused"], name="default"),
        model_options=ModelOptions(tiers={"smart": m["smart"]}, preferred="smart"),
    )
    assert (await preferring.run("go")).output == "smart answer"


async def test_fallbacks_follow_the_chosen_model() -> None:
    # covers G-65 with G-85: the chosen model is primary, the agent's fallbacks stay behind it
    m = models()
    failing_smart = ScriptedModel([Turn(error=RateLimited("busy", status=429))], name="smart")
    backup = ScriptedModel(["backup answer"], name="backup")
    agent = Agent(
        "a",
        model=m["default"],
        tools=[think_hard],
        retry=None,
        model_options=ModelOptions(tiers={"smart": failing_smart}, fallbacks=[backup]),
    )
    result = await agent.run("go")
    assert result.output == "backup answer"
    assert list(result.usage_by_model) == ["test:default", "test:backup"]


def test_misconfigured_hints_fail_before_any_run() -> None:
    # covers G-84 (resolved at warm-up), STYLE 17
    with pytest.raises(UserError, match="no 'smart' entry"):
        Agent("a", model=ScriptedModel([]), tools=[think_hard])
    with pytest.raises(UserError, match="unknown tier"):
        Agent(
            "a",
            model=ScriptedModel([]),
            model_options=ModelOptions(tiers={"huge": ScriptedModel([])}),
        )
    with pytest.raises(UserError, match="Unknown model provider 'nowhere'"):
        Agent("a", model=ScriptedModel([]), model_options=ModelOptions(preferred="nowhere:x"))
