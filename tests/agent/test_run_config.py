"""The frozen run configuration, derived variants, and the run-status transitions."""

from __future__ import annotations

import dataclasses
from dataclasses import replace

import pytest

from bastion import Agent, ModelSettings, UserError, tool
from bastion.agent import RunConfig, RunOptions, RunState, RunStatusError
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def test_the_config_is_frozen() -> None:
    agent = Agent("a", model=ScriptedModel([]), tools=[add], max_steps=3)
    config = agent.config
    assert isinstance(config, RunConfig)
    with pytest.raises(dataclasses.FrozenInstanceError):
        config.max_steps = 9  # type: ignore[misc]
    assert config.max_steps == 3
    assert [d.name for d in config.tools.advertised] == ["add"]


async def test_a_derived_config_changes_one_run_and_leaves_the_agent_as_it_was() -> None:
    model = ScriptedModel([Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]), "late", "plain"])
    agent = Agent(
        "a", model=model, tools=[add], max_steps=5, run_options=RunOptions(on_max_steps="return")
    )
    strict = replace(agent.config, max_steps=1, model_settings=ModelSettings(temperature=0))
    first = await agent.run("go", config=strict)
    assert first.status == "stopped"
    assert first.stop_reason == "max_steps"
    assert model.requests[0].settings.temperature == 0
    second = await agent.run("again")  # the agent's own config: 5 steps, no temperature
    assert second.status == "completed"
    assert second.output == "late"
    assert model.requests[1].settings.temperature is None


async def test_with_model_and_with_store_leave_the_original_agent_untouched() -> None:
    agent = Agent("a", model=ScriptedModel(["one"]), tools=[add])
    other = agent.with_model(ScriptedModel(["two"]))
    assert other.config.tools is agent.config.tools
    assert other.config.model is not agent.config.model
    assert (await other.run("x")).output == "two"
    assert (await agent.run("x")).output == "one"
    assert agent.config.store is None
    assert agent.with_store("memory://").config.store is not None
    assert agent.config.store is None


def test_a_config_of_another_agent_is_refused() -> None:
    agent = Agent("a", model=ScriptedModel([]))
    other = Agent("b", model=ScriptedModel([]))
    with pytest.raises(UserError, match="was given the config of agent 'b'"):
        agent.stream("x", config=other.config)


def test_a_run_status_moves_only_along_the_allowed_transitions() -> None:
    state = RunState(run_id="r", agent_name="a")
    state.suspend()
    assert state.status == "awaiting_approval"
    state.resume()
    state.complete("done")
    assert (state.status, state.output) == ("completed", "done")
    with pytest.raises(RunStatusError, match="from status 'completed' to 'running'"):
        state.resume()
    with pytest.raises(RunStatusError, match="from status 'completed' to 'failed'"):
        state.fail("x", "y")
    assert state.status == "completed"
    aborted = RunState(run_id="r2", agent_name="a")
    aborted.abort()
    aborted.suspend()  # calls waiting for a human are held when the run is aborted
    assert aborted.status == "awaiting_approval"
