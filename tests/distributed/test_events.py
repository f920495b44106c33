"""Live events of workflow runs: published by activities, followed from any seq."""

from __future__ import annotations

from pathlib import Path

import pytest
from temporalio.client import Client
from temporalio.testing import WorkflowEnvironment

from bastion import UserError
from bastion.core import AgentEvent
from bastion.distributed import TemporalAgent
from bastion.stores import open_store

from ._agents import adder, mailer


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
    # covers TEMPORAL-EVENTS
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
