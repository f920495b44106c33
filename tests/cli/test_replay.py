"""``bastion runs replay``: a recorded run streamed again from its recording."""

from __future__ import annotations

import asyncio
import json

from bastion import Agent
from bastion.stores import open_store
from bastion.testing import Call, ScriptedModel, Turn

from . import scripted_agents
from .test_runs import AGENTS, cli, store

__all__ = ["store"]


def _recorded_run(url: str) -> str:
    async def go() -> str:
        async with open_store(url) as stores:
            script = [
                Turn(tool_calls=[Call("double", {"x": 2}), Call("double", {"x": 21})]),
                "2 doubled is 4 and 21 doubled is 42.",
            ]
            agent = Agent(
                "doubler",
                model=ScriptedModel(script),
                tools=[scripted_agents.double],
                store=stores,
                record_responses=True,
            )
            result = await agent.run("Double 2 and 21.")
        assert result.status == "completed"
        return result.run_id

    return asyncio.run(go())


def test_scenario_37_replay_prints_the_recorded_run_again(store: str):
    # covers scenario-37
    run_id = _recorded_run(store)
    replayed = cli("runs", "replay", run_id, "--agent", f"{AGENTS}:doubler", "--json")
    assert replayed.exit_code == 0, replayed.output
    events = [json.loads(line) for line in replayed.stdout.splitlines()]
    ends = [e["result"] for e in events if e["type"] == "tool.execute.end"]
    assert ends == ["4", "42"]
    assert events[-1]["type"] == "agent.end"
    assert events[-1]["output"] == "2 doubled is 4 and 21 doubled is 42."
    assert run_id not in {e["run_id"] for e in events}  # a new run, not the recorded one


def test_replay_of_an_unrecorded_run_exits_2_and_says_why(store: str):
    # covers scenario-37
    async def go() -> str:
        async with open_store(store) as stores:
            result = await scripted_agents.doubler().with_store(stores).run("Double.")
        return result.run_id

    run_id = asyncio.run(go())
    refused = cli("runs", "replay", run_id, "--agent", f"{AGENTS}:doubler")
    assert refused.exit_code == 2
    assert "was not recorded" in refused.output
