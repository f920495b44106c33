"""``tool_choice`` per step: agent settings, ``prepare_step`` overrides, validation (issue 12)."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, ModelSettings, RunContext, tool
from bastion.agent import LoopHooks, StepOverrides
from bastion.core import UserError
from bastion.testing import Call, ScriptedModel, Turn
from tests.agent.conftest import chat_model_answering


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(side_effect_class="pure")
def mul(a: int, b: int) -> int:
    """Multiply two numbers."""
    return a * b


class Plan(LoopHooks):
    """Step 1 must call ``add`` with only ``add`` advertised; step 2 must answer in text."""

    def prepare_step(self, ctx: RunContext[Any], step: int) -> StepOverrides:
        if step == 1:
            return StepOverrides(tool_choice="add", tools=["add"])
        return StepOverrides(tool_choice="none", settings=ModelSettings(temperature=0.0))


async def test_agent_tool_choice_reaches_every_request() -> None:
    # covers issue 12 (tool_choice via settings)
    model = ScriptedModel([Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]), "3"])
    agent = Agent(
        "a", model=model, tools=[add, mul], model_settings=ModelSettings(tool_choice="required")
    )
    result = await agent.run("1+2?")
    assert result.output == "3"
    assert [r.settings.tool_choice for r in model.requests] == ["required", "required"]


async def test_prepare_step_sets_tool_choice_tools_and_settings_per_step() -> None:
    # covers issue 12 (tool_choice per step via prepare_step)
    model = ScriptedModel([Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]), "3"])
    agent = Agent(
        "a",
        model=model,
        tools=[add, mul],
        model_settings=ModelSettings(temperature=0.7, max_tokens=100),
        hooks=Plan(),
    )
    result = await agent.run("1+2?")
    assert result.output == "3"
    first, second = model.requests
    assert (first.settings.tool_choice, [t.name for t in first.tools]) == ("add", ["add"])
    assert (second.settings.tool_choice, [t.name for t in second.tools]) == ("none", ["add", "mul"])
    assert (first.settings.temperature, second.settings.temperature) == (0.7, 0.0)
    assert second.settings.max_tokens == 100  # fields the step leaves None are kept


async def test_a_named_tool_choice_reaches_the_wire() -> None:
    # covers issue 12 (tool_choice passed through to the vendor request)
    model, bodies = chat_model_answering("3")

    class ForceMul(LoopHooks):
        def prepare_step(self, ctx: RunContext[Any], step: int) -> StepOverrides:
            return StepOverrides(tool_choice="mul")

    agent = Agent("a", model=model, tools=[add, mul], retry=None, hooks=ForceMul())
    await agent.run("2*3?")
    assert bodies[0]["tool_choice"] == {"type": "function", "function": {"name": "mul"}}


def test_an_agent_tool_choice_naming_no_tool_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"tool_choice='sub' is not one of its tools.*'add'"):
        Agent(
            "a",
            model=ScriptedModel([]),
            tools=[add],
            model_settings=ModelSettings(tool_choice="sub"),
        )


async def test_prepare_step_naming_a_tool_the_step_does_not_advertise_fails_clearly() -> None:
    class Wrong(LoopHooks):
        def prepare_step(self, ctx: RunContext[Any], step: int) -> StepOverrides:
            return StepOverrides(tool_choice="mul", tools=["add"])

    model = ScriptedModel(["never"])
    result = await Agent("a", model=model, tools=[add, mul], hooks=Wrong()).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert "tool_choice='mul' is not a tool this step advertises" in result.error.message
    assert "'add'" in result.error.message
    assert model.requests == []  # refused before anything was sent


async def test_required_without_tools_fails_before_sending() -> None:
    class Required(LoopHooks):
        def prepare_step(self, ctx: RunContext[Any], step: int) -> StepOverrides:
            return StepOverrides(tool_choice="required")

    model = ScriptedModel(["never"])
    result = await Agent("a", model=model, hooks=Required()).run("go")
    assert result.error is not None
    assert "tool_choice='required' needs tools" in result.error.message
    assert model.requests == []


async def test_prepare_step_advertising_an_unknown_tool_fails_clearly() -> None:
    class Unknown(LoopHooks):
        def prepare_step(self, ctx: RunContext[Any], step: int) -> StepOverrides:
            return StepOverrides(tools=["add", "div"])

    result = await Agent("a", model=ScriptedModel(["x"]), tools=[add], hooks=Unknown()).run("go")
    assert result.error is not None
    assert "unknown tool(s) 'div'" in result.error.message


def test_bad_overrides_are_user_errors() -> None:
    with pytest.raises(UserError, match="must be 'auto', 'required', 'none' or a tool name"):
        StepOverrides(tool_choice="")
    with pytest.raises(UserError, match="tools must be a list of tool names"):
        StepOverrides(tools="add")
    with pytest.raises(UserError, match="settings must be a ModelSettings"):
        StepOverrides(settings={"temperature": 0})  # pyright: ignore[reportArgumentType]
