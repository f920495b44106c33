"""``Agent(tools=[subagents({...})])``: named sub-agents as ``task_<name>`` tools.

Built on ``as_tool``: a ``task_explore`` tool runs a nested loop with the sub-agent's own
tools, on the parent's model unless the spec names one, with the sub-agent's text arriving
as the call's progress; aborts and ``max_steps`` apply to it.
"""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import AgentStream
from bastion.core import (
    AgentEvent,
    ModelRequest,
    SystemMessage,
    ToolExecuteProgressEvent,
    ToolMessage,
    UserError,
)
from bastion.multi import SubagentSpec, subagents
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn

EXPLORER = "You explore the repository."


@tool(side_effect_class="read_only")
def list_files() -> str:
    """List the files."""
    return "README.md, setup.py"


def instructions_of(request: ModelRequest) -> str:
    first = request.messages[0]
    return str(first.content) if isinstance(first, SystemMessage) else ""


def shared_model(seen: list[str]) -> FunctionModel:
    """One model for parent and sub-agent: it answers by whose instructions it reads."""

    def answer(request: ModelRequest) -> Turn:
        who = "explore" if instructions_of(request) == EXPLORER else "boss"
        seen.append(who)
        done = any(isinstance(m, ToolMessage) for m in request.messages)
        if who == "explore":
            if done:
                return Turn(text="Two files: README.md and setup.py.")
            return Turn(tool_calls=[Call("list_files", {}, id="f1")])
        if done:
            return Turn(text="The explorer found two files.")
        return Turn(tool_calls=[Call("task_explore", {"input": "what is here?"}, id="t1")])

    return FunctionModel(answer)


async def test_a_task_tool_runs_a_nested_loop_on_the_parents_model() -> None:
    # covers §3.4 scenario 27 (task_explore: own tools, parent model, text as progress)
    seen: list[str] = []
    spec = SubagentSpec(description="Explore the code.", instructions=EXPLORER, tools=[list_files])
    parent = Agent("boss", model=shared_model(seen), tools=[subagents({"explore": spec})])
    assert "task_explore" in parent.config.tools.by_name
    assert "list_files" not in parent.config.tools.by_name  # the sub-agent's tools stay its own
    events: list[AgentEvent] = [e async for e in parent.stream("Look around.")]
    assert seen == ["boss", "explore", "explore", "boss"]  # one model, both loops
    progress = [e for e in events if isinstance(e, ToolExecuteProgressEvent)]
    assert {e.tool_call_id for e in progress} == {"t1"}
    assert "".join(e.message or "" for e in progress) == "Two files: README.md and setup.py."
    end = events[-1]
    assert end.type == "agent.end"


async def test_a_task_sub_agent_may_name_its_own_model_or_be_an_agent() -> None:
    own = ScriptedModel(["From my own model."])
    ready = Agent("reviewer", model=ScriptedModel(["Reviewed."]))
    parent = Agent(
        "boss",
        model=ScriptedModel(
            [
                Turn(
                    tool_calls=[
                        Call("task_explore", {"input": "x"}, id="t1"),
                        Call("task_review", {"input": "y"}, id="t2"),
                    ]
                ),
                "ok",
            ]
        ),
        tools=[subagents({"explore": SubagentSpec(model=own), "review": ready})],
    )
    result = await parent.run("go")
    results = [str(m.content) for m in result.messages if isinstance(m, ToolMessage)]
    assert results == ["From my own model.", "Reviewed."]


async def test_a_task_sub_agent_stops_at_its_max_steps() -> None:
    # covers §3.4 scenario 27 (maxSteps)
    looping = ScriptedModel(
        [Turn(tool_calls=[Call("list_files", {}, id=f"f{i}")]) for i in range(5)]
    )
    spec = SubagentSpec(model=looping, tools=[list_files], max_steps=2)
    parent = Agent(
        "boss",
        model=ScriptedModel([Turn(tool_calls=[Call("task_explore", {"input": "x"})]), "gave up"]),
        tools=[subagents({"explore": spec})],
    )
    result = await parent.run("go")
    [message] = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert message.is_error
    assert "reached max_steps=2" in str(message.content)
    assert len(looping.requests) == 2


async def test_aborting_the_parent_aborts_the_task_sub_agent() -> None:
    # covers §3.4 scenario 27 (abort)
    seen: list[str] = []
    spec = SubagentSpec(instructions=EXPLORER, tools=[list_files])
    parent = Agent("boss", model=shared_model(seen), tools=[subagents({"explore": spec})])
    stream: AgentStream[Any] = parent.stream("Look around.")
    async for event in stream:
        if isinstance(event, ToolExecuteProgressEvent):
            stream.abort()
    assert stream.result.status == "aborted"
    assert seen == ["boss", "explore", "explore"]  # the parent's model was not asked again


def test_bad_subagents_are_refused() -> None:
    with pytest.raises(UserError, match="must be 1-64 letters"):
        Agent("boss", model=ScriptedModel(["x"]), tools=[subagents({"two words": SubagentSpec()})])
    with pytest.raises(UserError, match="must be an Agent or a SubagentSpec"):
        Agent("boss", model=ScriptedModel(["x"]), tools=[subagents({"x": "an agent"})])  # pyright: ignore[reportArgumentType]
