"""Durable suspend and resume of a graph on real stores (§3.1 scenario 42).

A node pauses for a human (``ctx.pause``): the execution suspends into the store; a fresh
graph instance on the same store resumes it with a directive, and only the paused node and
what follows it run. Two resumes racing with the same decision: exactly one goes on, the
other gets ``CheckpointConflict`` and runs nothing.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import UserError
from bastion.governance import DenyDecision, ResultDecision
from bastion.graph import (
    CheckpointConflict,
    Graph,
    GraphAfter,
    NodeContext,
    NodeError,
    StoreCheckpointer,
)
from bastion.stores import RunBusy
from bastion.testing import isolated_store
from bastion.tools import Directive, InterruptResolution


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store(request.param, tmp_path) as url:
        yield url


def review_graph(url: str, ran: list[str]) -> Graph:
    """draft → approve (pauses for a human) → publish."""

    async def draft(inputs: list[Any]) -> str:
        ran.append("draft")
        return f"draft of {inputs[0]}"

    async def approve(inputs: list[Any], ctx: NodeContext) -> Any:
        ran.append("approve")
        return await ctx.pause({"draft": inputs[0]}, reason="approve the draft")

    async def publish(inputs: list[Any]) -> str:
        ran.append("publish")
        return f"published with note {inputs[0]['note']!r}"

    graph = Graph("review", checkpointer=StoreCheckpointer(url))
    graph.add_node("draft", draft).add_node("approve", approve).add_node("publish", publish)
    graph.add_edge("draft", "approve").add_edge("approve", "publish")
    return graph


async def _suspend(url: str) -> tuple[str, str]:
    """Run the graph until it suspends; return (execution id, pending interrupt id)."""
    ran: list[str] = []
    graph = review_graph(url, ran)
    stream = graph.stream("the plan", execution_id="gx_review1")
    signals = [signal async for signal in stream]
    assert stream.result is not None
    assert stream.result.status == "suspended"
    assert ran == ["draft", "approve"]
    errors = [s for s in signals if isinstance(s, NodeError)]
    assert [(e.node_key, e.kind) for e in errors] == [("approve", "suspended")]
    last = signals[-1]
    assert isinstance(last, GraphAfter)
    assert last.status == "suspended"
    record = await StoreCheckpointer(url).record("gx_review1")
    assert record.status == "awaiting_approval"
    assert [(p["node"], p["reason"]) for p in record.pending] == [("approve", "approve the draft")]
    assert record.pending[0]["payload"] == {"draft": "draft of the plan"}
    return "gx_review1", str(record.pending[0]["id"])


def _approve(interrupt_id: str, note: str) -> Directive:
    return Directive(
        interrupts=[
            InterruptResolution(
                interrupt_id=interrupt_id, decision=ResultDecision(value={"note": note})
            )
        ]
    )


async def test_a_fresh_graph_resumes_a_paused_execution_from_the_store(store_url: str) -> None:
    execution_id, interrupt_id = await _suspend(store_url)
    ran: list[str] = []
    fresh = review_graph(store_url, ran)  # another instance, as another process would build
    with pytest.raises(UserError, match=f"waiting for a decision on: {interrupt_id}"):
        await fresh.resume(execution_id)
    with pytest.raises(UserError, match="no pending interrupt or call 'int_nope'"):
        await fresh.resume(execution_id, _approve("int_nope", "x"))
    assert ran == []  # refused before anything ran or was written

    result = await fresh.resume(execution_id, _approve(interrupt_id, "ship it"))
    assert result.status == "completed"
    assert result.output == "published with note 'ship it'"
    assert ran == ["approve", "publish"]  # draft had finished: never run again
    record = await StoreCheckpointer(store_url).record(execution_id)
    assert record.status == "completed"
    assert record.output == "published with note 'ship it'"
    # Resuming an ended execution returns its recorded result and runs nothing.
    again = await review_graph(store_url, ran).resume(execution_id)
    assert again.output == result.output
    assert ran == ["approve", "publish"]


async def test_a_denied_pause_fails_the_node(store_url: str) -> None:
    execution_id, interrupt_id = await _suspend(store_url)
    ran: list[str] = []
    denial = Directive(
        interrupts=[
            InterruptResolution(interrupt_id=interrupt_id, decision=DenyDecision(reason="no"))
        ]
    )
    result = await review_graph(store_url, ran).resume(execution_id, denial)
    assert result.status == "failed"
    assert "no" in str(result.errors["approve"])
    assert ran == ["approve"]


async def test_racing_resumes_one_wins_the_other_gets_a_version_conflict(
    store_url: str,
) -> None:
    execution_id, interrupt_id = await _suspend(store_url)
    ran_a: list[str] = []
    ran_b: list[str] = []
    outcomes = await asyncio.gather(
        review_graph(store_url, ran_a).resume(execution_id, _approve(interrupt_id, "a")),
        review_graph(store_url, ran_b).resume(execution_id, _approve(interrupt_id, "b")),
        return_exceptions=True,
    )
    conflicts = [o for o in outcomes if isinstance(o, CheckpointConflict)]
    assert len(conflicts) == 1, outcomes
    assert "checkpoint-version-conflict" in str(conflicts[0])
    winner = next(o for o in outcomes if not isinstance(o, BaseException))
    assert winner.status == "completed"
    assert sorted([ran_a, ran_b], key=len) == [[], ["approve", "publish"]]  # once in all
    # A resume that comes after the winner finished is refused the same way.
    late: list[str] = []
    with pytest.raises(CheckpointConflict):
        await review_graph(store_url, late).resume(execution_id, _approve(interrupt_id, "c"))
    assert late == []


async def test_a_resume_while_the_owner_runs_is_refused_and_changes_nothing(
    store_url: str,
) -> None:
    started, go = asyncio.Event(), asyncio.Event()

    def build(url: str) -> Graph:
        async def slow(inputs: list[Any]) -> str:
            started.set()
            await go.wait()
            return "done"

        return Graph("slow", checkpointer=StoreCheckpointer(url)).add_node("slow", slow)

    owner = asyncio.create_task(build(store_url).run(None, execution_id="gx_live"))
    await started.wait()
    before = await StoreCheckpointer(store_url).record("gx_live")
    with pytest.raises(RunBusy, match="'gx_live' is running elsewhere"):
        await build(store_url).resume("gx_live")
    after = await StoreCheckpointer(store_url).record("gx_live")
    assert after.version == before.version  # nothing was written
    go.set()
    result = await owner
    assert (result.status, result.output) == ("completed", "done")


RACE_WORKER = Path(__file__).with_name("_race_worker.py")


async def _race_worker(store: str, workdir: Path, mode: str) -> str:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(RACE_WORKER),
        store,
        str(workdir),
        mode,
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return out.decode().strip()


async def test_two_processes_racing_to_resume_one_wins(store_url: str, tmp_path: Path) -> None:
    assert await _race_worker(store_url, tmp_path, "suspend") == "suspended"
    outcomes = await asyncio.gather(
        _race_worker(store_url, tmp_path, "resume"), _race_worker(store_url, tmp_path, "resume")
    )
    assert sorted(outcomes) == ["completed", "conflict"]
    ran = (tmp_path / "ran").read_text().split()
    assert ran == ["draft", "approve", "approve", "publish"]  # the winner's run only
