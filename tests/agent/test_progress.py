"""``agent.progress``: progress artifacts (G-06) in the agent's store."""

import asyncio
from pathlib import Path

from bastion import Agent
from bastion.stores import open_store
from bastion.testing import ScriptedModel


def test_progress_is_written_to_the_agents_store_and_read_back(tmp_path: Path):
    # covers G-06, G-82
    url = f"sqlite:///{tmp_path / 'runs.db'}"

    async def go() -> None:
        agent = Agent("worker", model=ScriptedModel(["ok"]), store=url)
        try:
            first = await agent.progress.write("planned 3 steps", role="planner", run_id="run_1")
            second = await agent.progress.write(
                "step 1 done", role="coder", run_id="run_1", sensitivity="secret", tags=["a"]
            )
            await agent.progress.write("other run", role="coder", run_id="run_2", seq=7)
            assert (first.seq, second.seq) == (1, 2)  # numbered after the run's last
            assert second.sensitivity == "secret"
            assert second.tags == ("a",)
            mine = await agent.progress.read(run_id="run_1")
            assert [a.content for a in mine] == ["planned 3 steps", "step 1 done"]
            coder = await agent.progress.read(role="coder")
            assert [a.content for a in coder] == ["step 1 done", "other run"]
            later = await agent.progress.read(run_id="run_1", since_seq=1)
            assert [a.content for a in later] == ["step 1 done"]
            latest = await agent.progress.read(max_artifacts=1)
            assert [a.content for a in latest] == ["other run"]
        finally:
            await agent.aclose()
        async with open_store(url) as stores:  # another reader of the same store sees them
            stored = await stores.artifacts.read(run_id="run_1")
            assert [(a.role, a.seq) for a in stored] == [("planner", 1), ("coder", 2)]

    asyncio.run(go())


def test_an_agent_without_a_store_keeps_progress_in_memory():
    # covers G-06
    async def go() -> None:
        agent = Agent("worker", model=ScriptedModel(["ok"]))
        await agent.progress.write("note", role="planner")
        await agent.progress.write("note 2", role="planner")
        notes = await agent.progress.read()
        assert [(a.content, a.seq, a.run_id) for a in notes] == [
            ("note", 1, "agent:worker"),
            ("note 2", 2, "agent:worker"),
        ]
        other = Agent("other", model=ScriptedModel(["ok"]))
        assert await other.progress.read() == []

    asyncio.run(go())
