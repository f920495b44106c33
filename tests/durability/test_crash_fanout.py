"""Crash during a fan-out: the worker is SIGKILLed with children in flight.

``finished``: child ``a`` has finished (its outcome is journaled in the fan-out's composite
run) while ``b`` and ``c`` wait inside their model calls. Running the fan-out again, in a new
process with the same ``fan_out_id``, takes ``a``'s journaled outcome (its model is not
called again) and runs only ``b`` and ``c``.

``tool``: all three children are in flight, ``a`` after its first model call and its tool
ran. The re-run continues each child's own run (its id derived from the fan-out id and the
child) from its journal: ``a``'s first model call and its tool are not repeated.

Against a SQLite file and PostgreSQL (one schema per case).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any, cast

import pytest

from bastion.core import new_id
from bastion.multi._fanout_relay import fan_out_child_run_id
from bastion.stores import open_store
from tests._processes import kill_at, run_json
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_fanout_worker.py")
DSN = postgres_dsn()


async def _start_and_kill(store: str, workdir: Path, scenario: str) -> None:
    await kill_at(WORKER, store, str(workdir), "start", scenario, line="in-flight")


async def _resume(store: str, workdir: Path, scenario: str) -> dict[str, Any]:
    found: dict[str, Any] = await run_json(WORKER, store, str(workdir), "resume", scenario)
    return found


def _lines(workdir: Path, name: str) -> list[str]:
    path = workdir / name
    return sorted(path.read_text().split()) if path.exists() else []


async def _check(store: str, workdir: Path) -> None:
    await _start_and_kill(store, workdir, "finished")
    async with open_store(store) as stores:
        entries = await stores.journal.read("review-1")
        record = await stores.journal.get_run("review-1")
    assert [e.kind for e in entries] == ["run_started", "tool_result"]
    assert entries[1].payload["tool_call_id"] == "a"
    assert record is not None
    assert record.status == "running"
    assert _lines(workdir, "model_calls") == ["a:1", "b:1", "c:1"]

    result = await _resume(store, workdir, "finished")
    ids = [fan_out_child_run_id("review-1", i, name) for i, name in enumerate("abc")]
    assert result["output"] == "alpha\n\nbeta\n\ngamma"
    assert result["children"] == [
        ["a", "completed", True, ids[0]],
        ["b", "completed", False, ids[1]],
        ["c", "completed", False, ids[2]],
    ]
    # a ran once, in the first process; b's and c's calls were in flight, never answered
    assert _lines(workdir, "model_calls") == ["a:1", "b:1", "b:1", "c:1", "c:1"]
    async with open_store(store) as stores:
        entries = await stores.journal.read("review-1")
        record = await stores.journal.get_run("review-1")
    assert [e.kind for e in entries] == [
        "run_started",
        "tool_result",
        "tool_result",
        "tool_result",
        "run_ended",
    ]
    assert record is not None
    assert record.status == "completed"


async def _check_tool(store: str, workdir: Path) -> None:
    """Three children in flight, ``a`` past its tool: each continues from its own journal."""
    ids = [fan_out_child_run_id("review-2", i, name) for i, name in enumerate("abc")]
    await _start_and_kill(store, workdir, "tool")
    assert _lines(workdir, "model_calls") == ["a:1", "a:2", "b:1", "c:1"]
    assert _lines(workdir, "tool_runs") == ["a"]
    async with open_store(store) as stores:
        entries = await stores.journal.read("review-2")
        started = await stores.journal.get_run(ids[0])
        a_kinds = [e.kind for e in await stores.journal.read(ids[0])]
    assert [e.kind for e in entries] == ["run_started"]  # no child had ended
    assert started is not None
    assert started.status == "running"  # a's run, cut by the crash
    assert "tool_result" in a_kinds  # a's tool result is in a's own journal

    result = await _resume(store, workdir, "tool")
    assert result["output"] == "alpha\n\nbeta\n\ngamma"
    assert result["children"] == [
        ["a", "completed", False, ids[0]],
        ["b", "completed", False, ids[1]],
        ["c", "completed", False, ids[2]],
    ]
    # the stream relayed each child's events, with the child's run id
    assert result["relayed"] == [f"{name} {ids[i]}" for i, name in enumerate("abc")]
    # a's first model call and its tool ran once, in the killed process; only the call in
    # flight (a's second, b's and c's first) runs again
    assert _lines(workdir, "model_calls") == ["a:1", "a:2", "a:2", "b:1", "b:1", "c:1", "c:1"]
    assert _lines(workdir, "tool_runs") == ["a"]
    async with open_store(store) as stores:
        entries = await stores.journal.read("review-2")
        ended = [await stores.journal.get_run(run_id) for run_id in ids]
        first = (await stores.journal.read(ids[0]))[0]
    assert [e.kind for e in entries] == ["run_started"] + ["tool_result"] * 3 + ["run_ended"]
    assert [r.status if r is not None else None for r in ended] == ["completed"] * 3
    assert first.kind == "run_started"
    state = cast("dict[str, Any]", first.payload["state"])
    assert state["metadata"]["bastion.fan_out_id"] == "review-2"


async def test_sqlite(tmp_path: Path) -> None:
    await _check(f"sqlite:///{tmp_path}/bastion.db", tmp_path)


async def test_sqlite_child_resumes_from_its_journal(tmp_path: Path) -> None:
    await _check_tool(f"sqlite:///{tmp_path}/bastion.db", tmp_path)


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    import psycopg
    from psycopg import sql

    schema = new_id("bastion_fanout")
    sep = "&" if "?" in DSN else "?"
    yield f"{DSN}{sep}schema={schema}"
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


async def test_postgres(postgres_url: str, tmp_path: Path) -> None:
    await _check(postgres_url, tmp_path)


async def test_postgres_child_resumes_from_its_journal(postgres_url: str, tmp_path: Path) -> None:
    await _check_tool(postgres_url, tmp_path)
