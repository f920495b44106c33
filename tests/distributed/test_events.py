"""Live events of workflow runs: published by activities, followed from any seq."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import UserError
from bastion.core import AgentEvent, dump_event
from bastion.distributed import TemporalAgent
from bastion.distributed._events import EventChannel
from bastion.stores import open_store
from tests.durability._backends import store_url

from ._agents import adder, mailer
from ._events_worker import publishing_agent
from .test_worker_crash import _line

__all__ = ["store_url"]  # the fixture: a fresh store of each backend

WORKER = Path(__file__).with_name("_events_worker.py")


@asynccontextmanager
async def _worker(
    address: str, workdir: Path, store: str
) -> AsyncGenerator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(WORKER), address, str(workdir), store,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )  # fmt: skip
    try:
        await _line(process, "WORKER_READY")
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


def _shape(events: list[AgentEvent]) -> list[tuple[int, str]]:
    return [(e.seq, e.type) for e in events]


async def test_a_workflow_streams_the_events_of_the_local_run(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    local = [e async for e in adder().stream("Add 2 and 3")]
    store = f"sqlite:///{tmp_path}/events.db"
    remote_agent = TemporalAgent(adder(), events=store)
    client: Client = time_skipping.client
    async with remote_agent.worker(client):
        seen = [e async for e in remote_agent.stream(client, "Add 2 and 3", workflow_id="add-1")]
    assert _shape(seen) == _shape(local)  # same events, seqs 1..n, each once, in order
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))
    end = seen[-1]
    assert end.type == "agent.end"
    assert (end.status, end.output) == ("completed", "The sum is 5.")
    # another process on the store follows from any seq, after the run ended
    reader = TemporalAgent(adder(), events=store)
    tail = [e async for e in reader.follow(client, "add-1", after=5)]
    assert _shape(tail) == _shape(local)[5:]


async def test_a_parked_run_stream_ends_at_the_park_and_follow_resumes_after(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    stores = open_store(f"sqlite:///{tmp_path}/events.db")
    remote_agent = TemporalAgent(mailer(), events=stores)
    client: Client = time_skipping.client
    async with stores, remote_agent.worker(client):
        first = [e async for e in remote_agent.stream(client, "Mail", workflow_id="mail-1")]
        assert first[-1].type == "agent.end"
        assert first[-1].status == "awaiting_approval"
        [asked] = [e for e in first if e.type == "tool.approval.requested"]
        await remote_agent.approve(client, "mail-1", asked.tool_call_id)
        rest = [e async for e in remote_agent.follow(client, "mail-1", after=first[-1].seq)]
        everything = [e async for e in remote_agent.follow(client, "mail-1")]
    assert [e.type for e in rest][:3] == [
        "agent.start",
        "tool.approval.resolved",
        "tool.execute.start",
    ]
    assert rest[-1].type == "agent.end"
    assert rest[-1].status == "completed"
    assert _shape(everything) == _shape(first + rest)
    assert [e.seq for e in everything] == list(range(1, len(everything) + 1))


async def test_following_needs_an_event_store_and_a_workflow(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    client: Client = time_skipping.client
    with pytest.raises(UserError, match="publishes no events"):
        TemporalAgent(adder()).follow(client, "x")
    with pytest.raises(UserError, match="events must be a Stores"):
        TemporalAgent(adder(), events=3)  # type: ignore[arg-type]
    remote_agent = TemporalAgent(adder(), events=f"sqlite:///{tmp_path}/e.db")
    with pytest.raises(UserError, match="after must be"):
        remote_agent.follow(client, "x", after=-1)
    with pytest.raises(UserError, match="No workflow 'nope'"):
        [e async for e in remote_agent.follow(client, "nope")]


@pytest.mark.timeout(180)  # two worker processes on a shared machine
async def test_a_follower_sees_each_event_once_across_a_killed_worker(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    store = f"sqlite:///{tmp_path}/events.db"
    remote_agent = publishing_agent(tmp_path, store)
    seen: list[AgentEvent] = []

    async def follow() -> None:
        seen.extend([e async for e in remote_agent.follow(client, "charge-1")])

    async with _worker(address, tmp_path, store) as first:
        await remote_agent.start(client, "Charge 5", workflow_id="charge-1")
        await _line(first, "MODEL_STARTED")  # worker 1 is inside the first model call
        following = asyncio.create_task(follow())
        await _logged(remote_agent, client, "charge-1", "step.start")
        first.send_signal(signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL
    async with _worker(address, tmp_path, store):
        await asyncio.wait_for(following, timeout=60)
    assert [e.seq for e in seen] == list(range(1, len(seen) + 1))  # each once, in order
    types = [e.type for e in seen]
    assert types[:2] == ["agent.start", "step.start"]
    assert types.count("agent.start") == 1
    assert "tool.execute.end" in types
    assert seen[-1].type == "agent.end"
    assert (seen[-1].status, seen[-1].output) == ("completed", "charge result: charged 5")
    assert int((tmp_path / "model_calls").read_text()) == 3  # the lost call ran again


async def _logged(agent: TemporalAgent[str], client: Client, workflow_id: str, kind: str) -> None:
    """Wait until the workflow's log holds an event of type ``kind``."""
    async for event in agent.follow(client, workflow_id):
        if event.type == kind:
            return


async def test_a_batch_published_again_is_logged_once(store_url: str) -> None:
    channel = EventChannel(stores=open_store(store_url))  # SQLite, PostgreSQL and Redis
    logged = [json.loads(dump_event(e)) async for e in adder().stream("Add 2 and 3")]
    first, again = logged[:2], logged[:3]
    async with channel.stores:
        assert await channel.append("w", first) == 2
        assert await channel.append("w", again) == 1  # a retried or replayed publish
        assert await channel.append("w", again) == 0
        assert [e.seq for e in await channel.read("w", 0)] == [1, 2, 3]
        assert [e.seq for e in await channel.read("w", 1)] == [2, 3]


async def test_histories_replay_whether_events_were_published_or_not(
    time_skipping: WorkflowEnvironment, tmp_path: Path
) -> None:
    client: Client = time_skipping.client
    store = f"sqlite:///{tmp_path}/events.db"
    quiet, publishing = TemporalAgent(mailer()), TemporalAgent(mailer(), events=store)
    async with quiet.worker(client):
        before = await quiet.start(client, "Mail", workflow_id="before")
        await quiet.settle(client, "before")  # parked, in flight when events are turned on
        old_history = await before.fetch_history()
    async with publishing.worker(client):
        seen = [e async for e in publishing.stream(client, "Mail", workflow_id="after")]
        new_history = await client.get_workflow_handle("after").fetch_history()
    await publishing.aclose()
    assert seen[-1].type == "agent.end"
    # a run started without events replays on a worker that publishes them
    replayer = Replayer(workflows=[publishing.workflow])
    assert (await replayer.replay_workflow(old_history)).replay_failure is None
    assert (await replayer.replay_workflow(new_history)).replay_failure is None
