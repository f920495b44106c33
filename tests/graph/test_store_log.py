"""The graph execution log on real stores: group commit, optimistic concurrency, the fold."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import cast

import pytest

from bastion.core import UserError
from bastion.graph._store_log import CheckpointConflict, ExecutionLog
from bastion.graph._store_records import fold_execution
from bastion.stores import NewEntry, Stores, open_store
from bastion.testing import isolated_store


@pytest.fixture(params=["memory", "sqlite", "postgres", "redis"])
async def stores(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[Stores]:
    async with isolated_store(request.param, tmp_path) as url, open_store(url) as opened:
        yield opened


def _finished(key: str, step: int, output: object) -> dict[str, object]:
    return {"key": key, "node": key.split("#", maxsplit=1)[0], "step": step, "output": output}


async def test_a_step_checkpoint_rides_with_the_next_node_result(stores: Stores) -> None:
    log = ExecutionLog(stores, "gx_1", "review")
    await log.write("graph_started", {"graph": "review", "input": "doc"})
    await log.write("graph_node_finished", _finished("draft#0", 1, "v1"))
    log.queue("graph_step", {"step": 1, "finished": ["draft#0"]})
    assert await stores.journal.last_seq("gx_1") == 2  # queued, not yet written
    await log.write("graph_node_finished", _finished("check#0", 2, {"ok": True}))
    assert await stores.journal.last_seq("gx_1") == 4  # one commit for both
    record = fold_execution("gx_1", await stores.journal.read("gx_1"))
    assert record.graph == "review"
    assert record.input == "doc"
    assert record.version == 4
    assert {k: n.output for k, n in record.finished.items()} == {
        "draft#0": "v1",
        "check#0": {"ok": True},
    }
    assert [(c.version, c.kind, c.step, c.nodes) for c in record.checkpoints] == [
        (2, "node", 1, ("draft",)),
        (3, "round", 1, ("draft",)),
        (4, "node", 2, ("check",)),
    ]
    run = await stores.journal.get_run("gx_1")
    assert run is not None
    assert run.agent == "graph:review"


async def test_concurrent_node_results_are_all_durable_in_order(stores: Stores) -> None:
    log = ExecutionLog(stores, "gx_2", "fan")
    await log.write("graph_started", {"graph": "fan", "input": None})
    await asyncio.gather(
        *(log.write("graph_node_finished", _finished(f"n{i}#0", 1, i)) for i in range(10))
    )
    entries = await stores.journal.read("gx_2")
    assert [e.seq for e in entries] == list(range(1, 12))
    assert log.version == 11
    record = fold_execution("gx_2", entries)
    assert sorted(cast("int", n.output) for n in record.finished.values()) == list(range(10))


async def test_racing_writers_one_wins_the_other_gets_a_version_conflict(stores: Stores) -> None:
    first = ExecutionLog(stores, "gx_3", "g")
    await first.write("graph_started", {"graph": "g", "input": 1})
    a = ExecutionLog(stores, "gx_3", "g", version=1)
    b = ExecutionLog(stores, "gx_3", "g", version=1)
    outcomes = await asyncio.gather(
        a.write("graph_resumed", {"directive": None}),
        b.write("graph_resumed", {"directive": None}),
        return_exceptions=True,
    )
    errors = [o for o in outcomes if isinstance(o, BaseException)]
    assert len(errors) == 1
    conflict = errors[0]
    assert isinstance(conflict, CheckpointConflict)
    assert conflict.expected_version == 1
    assert conflict.actual_version == 2
    assert "checkpoint-version-conflict" in str(conflict)
    loser = a if outcomes[0] is conflict else b
    with pytest.raises(CheckpointConflict):  # the loser writes nothing more
        await loser.write("graph_node_finished", _finished("x#0", 1, None))
    assert await stores.journal.last_seq("gx_3") == 2


async def test_fold_refuses_an_agent_run_and_an_unknown_execution(stores: Stores) -> None:
    with pytest.raises(UserError, match="No graph execution 'nope'"):
        fold_execution("nope", await stores.journal.read("nope"))
    await stores.journal.append("run_1", [NewEntry(kind="run_started", payload={})], expected_seq=0)
    with pytest.raises(UserError, match="not a graph execution"):
        fold_execution("run_1", await stores.journal.read("run_1"))
