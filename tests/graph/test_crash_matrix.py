"""Graph crash matrix: a worker is SIGKILLed mid-execution; a new process resumes it.

The graph (``_crash_worker.py``) runs three parallel branches between ``prepare`` and
``join``; when the kill lands, ``right`` is always still running and the others may or may
not have finished. What the kill left durable is read back from the store, and the
expectations follow from it: every node whose result was durable ran exactly once in all
(never again on resume), the others ran again, and the output is the uninterrupted one.
Runs on a SQLite file and on PostgreSQL (one schema per test).
"""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.stores import open_store
from bastion.testing import isolated_store
from tests._processes import run_worker

WORKER = Path(__file__).with_name("_crash_worker.py")
NODES = ("prepare", "left", "middle", "right", "join")
EXPECTED = "GO-left + GO-middle + GO-right"
KILL_POINTS = (
    "after:graph_started",  # before the first node finished: listed and resumable
    "after:prepare",  # the root finished, the three branches started
    "before:left",  # left's body returned but its result was not durable: it runs again
    "after:left",  # left durable; middle maybe, right certainly still running
    "after:middle",  # left and middle durable, right running
)


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store(request.param, tmp_path) as url:
        yield url


async def _worker(store: str, workdir: Path, mode: str, crash: str | None) -> tuple[int, str, str]:
    return await run_worker(WORKER, store, str(workdir), mode, crash=crash)


def _counts(workdir: Path) -> dict[str, int]:
    counts = workdir / "counts"
    return {
        node: len((counts / node).read_text().split()) if (counts / node).exists() else 0
        for node in NODES
    }


async def _durable(store: str, execution_id: str) -> tuple[str | None, set[str]]:
    async with open_store(store) as stores:
        run = await stores.journal.get_run(execution_id)
        entries = await stores.journal.read(execution_id)
    finished = {str(e.payload["node"]) for e in entries if e.kind == "graph_node_finished"}
    return (run.status if run is not None else None), finished


@pytest.mark.parametrize("point", KILL_POINTS)
async def test_resume_reruns_only_the_nodes_that_had_not_finished(
    store_url: str, tmp_path: Path, point: str
) -> None:
    code, _, err = await _worker(store_url, tmp_path, "start", point)
    assert code == -signal.SIGKILL, err
    execution_id = (tmp_path / "execution_id").read_text()
    status, finished = await _durable(store_url, execution_id)
    assert status == "running"  # listed: the execution exists and looks live
    assert "right" not in finished  # the kill landed while a branch was in flight
    before = _counts(tmp_path)

    code, out, err = await _worker(store_url, tmp_path, "resume", None)
    assert code == 0, err
    assert f'"output": "{EXPECTED}"' in out, out
    after = _counts(tmp_path)
    for node in NODES:
        if node in finished:  # durable before the kill: never run again
            assert after[node] == 1, (node, before, after)
        else:  # not finished: runs (again) once on resume
            assert after[node] == before[node] + 1, (node, before, after)
    status, finished = await _durable(store_url, execution_id)
    assert status == "completed"
    assert finished == set(NODES)


async def test_killed_before_the_execution_was_written_leaves_nothing(
    store_url: str, tmp_path: Path
) -> None:
    code, _, err = await _worker(store_url, tmp_path, "start", "before:graph_started")
    assert code == -signal.SIGKILL, err
    assert _counts(tmp_path) == dict.fromkeys(NODES, 0)  # no node ran before the first commit
    code, _, err = await _worker(store_url, tmp_path, "resume", None)
    assert code != 0
    assert "No graph execution" in err


async def test_an_ended_execution_resumes_to_its_recorded_result(
    store_url: str, tmp_path: Path
) -> None:
    (tmp_path / "go").write_text("")  # right does not wait: the execution completes
    code, out, err = await _worker(store_url, tmp_path, "start", None)
    assert code == 0, err
    assert f'"output": "{EXPECTED}"' in out
    code, out, err = await _worker(store_url, tmp_path, "resume", None)
    assert code == 0, err
    assert f'"output": "{EXPECTED}"' in out
    assert _counts(tmp_path) == dict.fromkeys(NODES, 1)
