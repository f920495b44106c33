"""Durable sub-agent children across processes, on SQLite, PostgreSQL and Redis.

A parent (``boss``) runs a sub-agent (``janitor``) through ``as_tool``; the worker
(``_child_worker.py``) counts every completed model call and every tool run in files, so
the tests see that nothing is repeated when a second process takes over:

- the child suspends on an approval: the parent is ``awaiting_approval`` with the child's
  pending call in its ``pending_approvals``; a new process approves and resumes; the child
  then the parent complete;
- the worker is SIGKILLed inside the child (after its first tool ran): a new process resumes
  the parent, which continues the same child run from its journal.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.stores import open_store
from bastion.testing import isolated_store
from tests._processes import kill_at, run_json

WORKER = Path(__file__).with_name("_child_worker.py")


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store(request.param, tmp_path) as url:
        yield url


async def _run(store: str, workdir: Path, mode: str) -> dict[str, Any]:
    found: dict[str, Any] = await run_json(WORKER, store, str(workdir), mode)
    return found


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


async def _runs(store: str) -> dict[str, tuple[str, list[str]]]:
    """Each run in the store: its agent, status and entry kinds, by agent name."""
    async with open_store(store) as stores:
        page = await stores.journal.list_runs(limit=10)
        found: dict[str, tuple[str, list[str]]] = {}
        for record in page.runs:
            kinds = [e.kind for e in await stores.journal.read(record.run_id)]
            found[record.agent] = (record.status, kinds)
        return found


async def test_a_child_parked_on_approval_is_resumed_with_its_parent_in_another_process(
    store_url: str, tmp_path: Path
) -> None:
    # covers §3.1 scenario 29 (a child suspended on approval parks the parent; a grant resumes both)
    parked = await _run(store_url, tmp_path, "park")
    assert parked["status"] == "awaiting_approval"
    [pending] = parked["pending"]
    assert (pending["call"], pending["tool"]) == ("c1", "janitor")
    [waiting] = pending["context"]["pending"]
    assert (waiting["tool_name"], waiting["arguments"]) == ("delete", {"path": "/tmp/x"})
    runs = await _runs(store_url)
    assert runs["boss"][0] == runs["janitor"][0] == "awaiting_approval"
    assert _lines(tmp_path / "effects") == ["lookup"]

    result = await _run(store_url, tmp_path, "approve")
    assert result["status"] == "completed"
    assert result["text"] == "Report: Cleaned /tmp/x."
    assert result["usage"] == {"test:big": 2, "test:small": 3}  # by model, the child's included
    # Nothing ran twice: each model call and each tool once, across both processes.
    assert _lines(tmp_path / "model_calls") == [
        "boss 1",
        "janitor 1",
        "janitor 2",
        "janitor 3",
        "boss 2",
    ]
    assert _lines(tmp_path / "effects") == ["lookup", "delete"]
    runs = await _runs(store_url)
    assert runs["janitor"][0] == runs["boss"][0] == "completed"
    assert runs["janitor"][1].count("run_started") == 1  # the same child run, resumed


async def _start_and_kill(store: str, workdir: Path) -> None:
    await kill_at(WORKER, store, str(workdir), "crash", line="waiting", wait=60)


async def test_a_child_killed_mid_run_is_continued_from_its_journal(
    store_url: str, tmp_path: Path
) -> None:
    # covers G-56
    await _start_and_kill(store_url, tmp_path)
    assert _lines(tmp_path / "effects") == ["lookup"]
    runs = await _runs(store_url)
    assert runs["janitor"][0] == runs["boss"][0] == "running"

    result = await _run(store_url, tmp_path, "recover")
    assert result["status"] == "completed"
    assert result["text"] == "Report: Cleaned /tmp/x."
    assert _lines(tmp_path / "effects") == ["lookup", "delete"]  # lookup not run again
    assert _lines(tmp_path / "model_calls") == [  # completed calls: none sent twice
        "boss 1",
        "janitor 1",
        "janitor 2",
        "janitor 3",
        "boss 2",
    ]
    runs = await _runs(store_url)
    status, kinds = runs["janitor"]
    assert status == "completed"
    assert kinds.count("run_started") == 1  # the same child run, continued
