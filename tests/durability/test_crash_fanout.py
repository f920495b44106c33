"""Crash during a fan-out: the worker is SIGKILLed with three children in flight.

Child ``a`` has finished (its outcome is journaled in the fan-out's composite run) while
``b`` and ``c`` wait inside their model calls. Running the fan-out again, in a new process
with the same ``fan_out_id``, takes ``a``'s journaled outcome (its model is not called
again) and runs only ``b`` and ``c``. Against a SQLite file and PostgreSQL (one schema per
case).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.core import new_id
from bastion.stores import open_store

WORKER = Path(__file__).with_name("_fanout_worker.py")
DSN = os.environ.get("BASTION_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")


def _command(store: str, workdir: Path, mode: str) -> list[str]:
    return [sys.executable, str(WORKER), store, str(workdir), mode]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def _start_and_kill(store: str, workdir: Path) -> None:
    process = await asyncio.create_subprocess_exec(
        *_command(store, workdir, "start"),
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert line.decode().strip() == "in-flight"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        _, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, err.decode()


async def _resume(store: str, workdir: Path) -> dict[str, object]:
    process = await asyncio.create_subprocess_exec(
        *_command(store, workdir, "resume"),
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


async def _check(store: str, workdir: Path) -> None:
    await _start_and_kill(store, workdir)
    async with open_store(store) as stores:
        entries = await stores.journal.read("review-1")
        record = await stores.journal.get_run("review-1")
    assert [e.kind for e in entries] == ["run_started", "tool_result"]
    assert entries[1].payload["tool_call_id"] == "a"
    assert record is not None
    assert record.status == "running"
    calls = (workdir / "model_calls").read_text().split()
    assert sorted(calls) == ["a", "b", "c"]

    result = await _resume(store, workdir)
    assert result == {
        "output": "alpha\n\nbeta\n\ngamma",
        "children": [
            ["a", "completed", True],
            ["b", "completed", False],
            ["c", "completed", False],
        ],
    }
    calls = (workdir / "model_calls").read_text().split()
    assert sorted(calls) == ["a", "b", "b", "c", "c"]  # a ran once, in the first process
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


async def test_sqlite(tmp_path: Path) -> None:
    await _check(f"sqlite:///{tmp_path}/bastion.db", tmp_path)


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
