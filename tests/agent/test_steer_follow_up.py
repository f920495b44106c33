"""Steering and follow-ups on a plain run: ``stream.steer`` / ``stream.follow_up``.

A steering message joins before the run's next model call (``agent.steered``); a follow-up
waits until the run has its answer, then starts the next turn of the same run
(``agent.followup.queued``); a message sent after the run ended is dropped, never leaking
into the next run. ``agent.steer`` / ``agent.follow_up`` reach the one run in flight.
"""

from __future__ import annotations

import asyncio

import pytest

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, ToolMessage, UserError, UserMessage
from bastion.testing import Call, FunctionModel, Turn


def _agent(seen: list[list[str]]) -> Agent[None, str]:
    @tool(side_effect_class="read_only")
    def look(what: str) -> str:
        """Look at something."""
        return f"saw {what}"

    def answer(request: ModelRequest) -> Turn:
        roles: list[str] = []
        for m in request.messages:
            if isinstance(m, UserMessage):
                roles.append(f"user:{m.content}")
            elif isinstance(m, ToolMessage):
                roles.append(f"tool:{m.content}")
            elif isinstance(m, AssistantMessage):
                roles.append("assistant")
        seen.append(roles)
        if len(seen) == 1:
            return Turn(tool_calls=[Call("look", {"what": "garden"}, id="c1")])
        last = roles[-1]
        return Turn(text=f"answer to {last}")

    return Agent("helper", model=FunctionModel(answer), tools=[look])


async def test_steer_joins_before_the_next_call_and_follow_up_starts_the_next_turn() -> None:
    # covers §3.1 scenario 21 (steer / follow_up on a run)
    seen: list[list[str]] = []
    agent = _agent(seen)
    stream = agent.stream("What is in the garden?")
    events: list[str] = []
    async for event in stream:
        events.append(event.type)
        if event.type == "tool.execute.start":
            assert stream.follow_up("And the trees?")
            assert stream.steer("Only the flowers.")
        if event.type == "agent.steered":
            assert event.text == "Only the flowers."
        if event.type == "agent.followup.queued":
            assert event.text == "And the trees?"
            assert event.output == "answer to user:Only the flowers."
    result = stream.result
    assert seen == [
        ["user:What is in the garden?"],
        ["user:What is in the garden?", "assistant", "tool:saw garden", "user:Only the flowers."],
        [
            "user:What is in the garden?",
            "assistant",
            "tool:saw garden",
            "user:Only the flowers.",
            "assistant",
            "user:And the trees?",
        ],
    ]
    assert result.status == "completed"
    assert result.output == "answer to user:And the trees?"
    steered = events.index("agent.steered")
    followed = events.index("agent.followup.queued")
    starts = [i for i, t in enumerate(events) if t == "step.start"]
    assert starts[0] < steered < starts[1] < followed < starts[2]
    assert events.count("agent.end") == 1

    # After the end: nothing is taken, and the next run does not see it.
    assert not stream.steer("too late")
    assert not stream.follow_up("too late")
    assert not agent.steer("nobody listens")
    seen.clear()
    await agent.run("Again?")
    assert all("too late" not in line and "nobody" not in line for r in seen for line in r)


async def test_agent_steer_reaches_its_one_run_in_flight() -> None:
    gate = asyncio.Event()

    @tool(side_effect_class="read_only")
    async def wait() -> str:
        """Wait for the test."""
        await gate.wait()
        return "waited"

    requests: list[ModelRequest] = []

    def answer(request: ModelRequest) -> Turn:
        requests.append(request)
        if len(requests) == 1:
            return Turn(tool_calls=[Call("wait", {}, id="c1")])
        return Turn(text="done")

    agent = Agent("helper", model=FunctionModel(answer), tools=[wait])
    stream = agent.stream("go")
    async for event in stream:
        if event.type == "tool.execute.start":
            assert agent.steer("hurry")
            other = agent.stream("another")
            started = await other.__anext__()  # a second run in flight
            assert started.type == "agent.start"
            with pytest.raises(UserError, match="2 runs in flight"):
                agent.follow_up("which one?")
            await other.drain()
            gate.set()
    assert stream.result.output == "done"
    last = requests[-1].messages[-1]
    assert isinstance(last, UserMessage)
    assert last.content == "hurry"
    with pytest.raises(UserError, match="non-empty string"):
        stream.steer("  ")
