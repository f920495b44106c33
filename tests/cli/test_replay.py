"""``bastion runs replay``: a recorded run streamed again from its recording."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest

from bastion import Agent
from bastion.agent import ModelOptions
from bastion.core import UserError
from bastion.stores import open_store
from bastion.testing import Call, ReplayModel, ScriptedModel, Turn

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
                model_options=ModelOptions(record_responses=True),
            )
            result = await agent.run("Double 2 and 21.")
        assert result.status == "completed"
        return result.run_id

    return asyncio.run(go())


def test_scenario_37_replay_prints_the_recorded_run_again(store: str):
    # covers SPEC §3.1 scenario 37
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
    # covers SPEC §3.1 scenario 37
    async def go() -> str:
        async with open_store(store) as stores:
            result = await scripted_agents.doubler().with_store(stores).run("Double.")
        return result.run_id

    run_id = asyncio.run(go())
    refused = cli("runs", "replay", run_id, "--agent", f"{AGENTS}:doubler")
    assert refused.exit_code == 2
    assert "was not recorded" in refused.output


def test_scenario_37_an_exported_recording_replays_without_the_store(store: str, tmp_path: Path):
    # covers SPEC §3.1 scenario 37
    run_id = _recorded_run(store)
    exported = cli("runs", "export", run_id)
    assert exported.exit_code == 0, exported.output
    fixture = tmp_path / "run.jsonl"
    fixture.write_text(exported.stdout, encoding="utf-8")
    replay = ReplayModel.from_export(fixture)
    assert replay.run_id == run_id
    result = asyncio.run(replay.rerun(scripted_agents.doubler()).drain())
    assert result.output == "2 doubled is 4 and 21 doubled is 42."
    assert replay.remaining == 0


def test_an_export_that_is_not_one_is_refused(tmp_path: Path):
    broken = tmp_path / "notes.txt"
    broken.write_text('{"hello": 1}\n', encoding="utf-8")
    with pytest.raises(UserError, match=r"notes.txt:1 is not a journal entry"):
        ReplayModel.from_export(broken)
    with pytest.raises(UserError, match="Cannot read the run export"):
        ReplayModel.from_export(tmp_path / "missing.jsonl")
