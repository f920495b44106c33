"""Crash during a broadcast team run: the worker is SIGKILLed with three members in flight.

Member ``a`` is past its first model call and its tool; ``b`` and ``c`` wait inside their
first model call. Running the team again, in a new process with the same run id, continues
each member's own run (its id derived from the team's run id, the round and the member)
from its journal: ``a``'s first model call and its tool are not repeated; then the team's
model synthesises, and the team's composite run ends.

Against a SQLite file and PostgreSQL (one schema per case).
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import new_id
from bastion.multi._team_keys import member_key, team_call_run_id
from bastion.stores import open_store
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_team_worker.py")
DSN = postgres_dsn()
IDS = [team_call_run_id("team-1", i, member_key(1, name)) for i, name in enumerate("abc")]


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}


async def _spawn(store: str, workdir: Path, mode: str) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        *[sys.executable, str(WORKER), store, str(workdir), mode],
        env=_env(),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def _start_and_kill(store: str, workdir: Path) -> None:
    process = await _spawn(store, workdir, "start")
    assert process.stdout is not None
    try:
        line = await asyncio.wait_for(process.stdout.readline(), timeout=30)
        assert line.decode().strip() == "in-flight"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGKILL)
        _, err = await process.communicate()
    assert process.returncode == -signal.SIGKILL, err.decode()


async def _resume(store: str, workdir: Path) -> dict[str, Any]:
    process = await _spawn(store, workdir, "resume")
    out, err = await process.communicate()
    assert process.returncode == 0, err.decode()
    return json.loads(out.decode().strip().splitlines()[-1])


def _lines(workdir: Path, name: str) -> list[str]:
    path = workdir / name
    return sorted(path.read_text().split()) if path.exists() else []


async def _check(store: str, workdir: Path) -> None:
    await _start_and_kill(store, workdir)
    assert _lines(workdir, "model_calls") == ["a:1", "a:2", "b:1", "c:1"]
    assert _lines(workdir, "tool_runs") == ["a"]
    async with open_store(store) as stores:
        entries = await stores.journal.read("team-1")
        team = await stores.journal.get_run("team-1")
        a_run = await stores.journal.get_run(IDS[0])
        a_kinds = [e.kind for e in await stores.journal.read(IDS[0])]
    assert [e.kind for e in entries] == ["run_started"]  # no member call had ended
    assert team is not None
    assert team.status == "running"
    assert a_run is not None
    assert a_run.status == "running"  # a's run, cut by the crash
    assert "tool_result" in a_kinds  # a's tool result is in a's own journal (the team's store)

    result = await _resume(store, workdir)
    # usage counts a's first call (7 tokens, journaled in the killed process) once
    assert result == {"status": "completed", "output": "alpha, beta and gamma", "tokens": 42}
    # a's first model call and its tool ran once, in the killed process; only the calls in
    # flight (a's second, b's and c's first) run again, then the synthesis
    assert _lines(workdir, "model_calls") == [
        "a:1",
        "a:2",
        "a:2",
        "b:1",
        "b:1",
        "c:1",
        "c:1",
        "lead:1",
    ]
    assert _lines(workdir, "tool_runs") == ["a"]
    async with open_store(store) as stores:
        entries = await stores.journal.read("team-1")
        team = await stores.journal.get_run("team-1")
        members = [await stores.journal.get_run(run_id) for run_id in IDS]
    assert [e.kind for e in entries] == ["run_started", *["tool_result"] * 4, "run_ended"]
    assert team is not None
    assert team.status == "completed"
    assert [m.status if m is not None else None for m in members] == ["completed"] * 3


async def test_sqlite(tmp_path: Path) -> None:
    await _check(f"sqlite:///{tmp_path}/bastion.db", tmp_path)


@pytest.fixture
async def postgres_url() -> AsyncIterator[str]:
    import psycopg
    from psycopg import sql

    schema = new_id("bastion_team")
    sep = "&" if "?" in DSN else "?"
    yield f"{DSN}{sep}schema={schema}"
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


async def test_postgres(postgres_url: str, tmp_path: Path) -> None:
    await _check(postgres_url, tmp_path)
