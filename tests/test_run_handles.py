"""Every run's handle is one kind of thing, and every agent-like is run the same way.

An agent's, a team's, an external agent's, a graph's and a fan-out's streams are all
``RunHandle``s: iterate them (or ``drain()`` them) inside ``async with``, then read
``result``; before the end ``result`` says the run has not ended. Agents, teams and external
agents are ``AgentLike``: whatever takes one takes the others. A session runs its agent
for a tenant, with an event bus of its own, and names each run before its events.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from bastion import Agent, Graph, RunOptions, tool
from bastion.agent import AgentLike, AgentRunHandle
from bastion.core import AgentEvent, EventBus, RunContext, RunHandle, UserError
from bastion.multi import ExternalContext, Team, external_agent, fan_out_stream
from bastion.sessions import RunStarted, Session
from bastion.testing import Call, ScriptedModel, Turn


def an_agent(name: str = "echo") -> Agent[Any, Any]:
    return Agent(name, model=ScriptedModel([f"{name} says hi"]))


def a_team() -> Team:
    return Team("desk", members=[an_agent("member")], mode="route", model=ScriptedModel(["member"]))


def an_external() -> AgentLike:
    async def answer(input: str, ctx: ExternalContext) -> str:
        return f"external: {input}"

    return external_agent("outside", answer)


AGENT_LIKES: dict[str, Callable[[], AgentLike]] = {
    "agent": an_agent,
    "team": a_team,
    "external": an_external,
}


@pytest.mark.parametrize("kind", list(AGENT_LIKES))
async def test_every_agent_like_runs_as_one_kind_of_handle(kind: str) -> None:
    runner = AGENT_LIKES[kind]()
    run = runner.stream("hi")
    assert isinstance(run, AgentRunHandle)
    assert isinstance(run, RunHandle)
    with pytest.raises(UserError, match=f"Run {run.run_id} has not ended yet"):
        _ = run.result
    async with run:
        events: list[AgentEvent] = [event async for event in run]
    assert (events[0].type, events[-1].type) == ("agent.start", "agent.end")
    assert run.done
    assert run.result.status == "completed"
    assert {event.run_id for event in events} == {run.run_id}


@pytest.mark.parametrize("kind", list(AGENT_LIKES))
async def test_drain_runs_any_agent_like_to_its_result(kind: str) -> None:
    run = AGENT_LIKES[kind]().stream("hi")
    result = await run.drain()
    assert result is run.result
    assert result.status == "completed"


async def test_a_graph_stream_is_a_run_handle_named_by_its_execution() -> None:
    graph = Graph("g").add_node("answer", lambda inputs: 42)
    stream = graph.stream(execution_id="exec-1")
    assert isinstance(stream, RunHandle)
    assert stream.run_id == "exec-1"
    with pytest.raises(UserError, match="Graph execution exec-1 has not ended yet"):
        _ = stream.result
    async with stream:
        signals = [signal.type async for signal in stream]
    assert signals[-1] == "graph.after"
    assert stream.result.output == 42


async def test_a_fan_out_stream_is_a_run_handle_and_drains_to_its_result() -> None:
    lead = Agent("lead", model=ScriptedModel([]))
    fan = fan_out_stream(lead, [(an_agent("a"), "x"), (an_external(), "y")], fan_out_id="f-1")
    assert isinstance(fan, RunHandle)
    assert fan.run_id == "f-1"
    with pytest.raises(UserError, match="Fan-out f-1 has not ended yet"):
        _ = fan.result
    result = await fan.drain()
    assert [child.status for child in result.children] == ["completed", "completed"]
    assert result.output == fan.result.output


async def test_an_aborted_fan_out_stops_its_children_and_has_no_result() -> None:
    started = asyncio.Event()

    async def forever(input: str, ctx: ExternalContext) -> str:
        started.set()
        await asyncio.Event().wait()  # never set: only the abort ends it
        return "never"

    lead = Agent("lead", model=ScriptedModel([]))
    fan = fan_out_stream(lead, [(external_agent("slow", forever), "x")], fan_out_id="f-2")

    async def abort_once_started() -> None:
        await started.wait()
        fan.abort()

    aborter = asyncio.create_task(abort_once_started())
    async with fan:
        seen = [event.type async for event in fan]
    await aborter
    assert seen[0] == "agent.fanout.spawned"
    assert "agent.fanout.merged" not in seen
    with pytest.raises(UserError, match="Fan-out f-2 was aborted"):
        _ = fan.result


@tool(side_effect_class="read_only")
def whose(ctx: RunContext[Any]) -> str:
    """Say which tenant the run belongs to."""
    return f"tenant={ctx.tenant_id}"


async def test_a_session_runs_for_its_tenant_with_its_own_bus_and_names_each_run_first() -> None:
    model = ScriptedModel([Turn(tool_calls=[Call("whose", {})]), "done"])
    agent_saw: list[str] = []
    agent_bus = EventBus().on("*", lambda event: agent_saw.append(event.type))
    agent = Agent("helper", model=model, tools=[whose], run_options=RunOptions(event_bus=agent_bus))
    order: list[str] = []
    session_bus = EventBus().on("*", lambda event: order.append(f"event:{event.type}"))
    session = Session(agent, tenant_id="acme", event_bus=session_bus)
    named: list[str] = []

    def started(run: RunStarted) -> None:
        order.append("run")
        named.append(run.run_id)

    session.on("run", started)
    results: list[str] = []
    session.on("tool_result", lambda result: results.append(str(result.result)))
    session.send("who am I working for?")
    await session.wait_for_idle()
    assert results == ["tenant=acme"]
    assert len(named) == 1
    assert order[:2] == ["run", "event:agent.start"]
    assert order[-1] == "event:agent.end"
    assert agent_saw == [entry.removeprefix("event:") for entry in order[1:]]  # both buses
