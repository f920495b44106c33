"""Crash after a person answered a tool's question: the answer is in the journal.

A tool asks a question (``InputRequired``); the run suspends; a second process resumes it
with the answer and is SIGKILLed while the tool, called again with the answer, is running.
A third process recovers the run with no directive: the tool runs again with the answer
read back from the journal (it is not asked again, and nobody has to answer twice), and
the run completes. Against a SQLite file and PostgreSQL (one schema per case).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import new_id
from bastion.stores import open_store
from tests._processes import kill_at, run_json
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_answer_worker.py")
DSN = postgres_dsn()


async def _run(store: str, workdir: Path, mode: str) -> dict[str, object]:
    found: dict[str, object] = await run_json(WORKER, store, str(workdir), mode)
    return found


async def _answer_and_kill(store: str, workdir: Path) -> None:
    await kill_at(WORKER, store, str(workdir), "answer", line="running")


async def _check(store: str, workdir: Path) -> None:
    started = await _run(store, workdir, "start")
    assert started == {"status": "awaiting_approval", "output": None, "pending": ["c1"]}
    await _answer_and_kill(store, workdir)
    run_id = (workdir / "run_id").read_text()
    async with open_store(store) as stores:
        kinds = [e.kind for e in await stores.journal.read(run_id)]
        decided = [e for e in await stores.journal.read(run_id) if e.kind == "interrupt_decided"]
    assert kinds[-2:] == ["interrupt_decided", "tool_call_started"]  # killed inside the tool
    (entry,) = decided
    payload: Any = entry.payload
    (approval,) = payload["approvals"]
    assert approval["answer"] == {
        "action": "accept",
        "content": {"channel": "stable"},
    }

    recovered = await _run(store, workdir, "recover")
    assert recovered == {
        "status": "completed",
        "output": "Done: 1.2 planned for stable",
        "pending": [],
    }
    # Asked once, run with the answer in the killed process, run with it again on recovery.
    assert (workdir / "calls").read_text().split() == ["asked", "stable", "stable"]
    assert (workdir / "model_calls").read_text().split() == ["call", "call"]


async def test_sqlite(tmp_path: Path) -> None:
    await _check(f"sqlite:///{tmp_path}/bastion.db", tmp_path)


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    import psycopg
    from psycopg import sql

    schema = new_id("bastion_answer")
    sep = "&" if "?" in DSN else "?"
    yield f"{DSN}{sep}schema={schema}"
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


async def test_postgres(postgres_url: str, tmp_path: Path) -> None:
    await _check(postgres_url, tmp_path)
