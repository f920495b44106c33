"""A run killed (SIGKILL) around its handoff resumes in a new process with the target active.

The worker (``_handoff_worker.py``) runs a triage agent that hands off to billing, found by
name in an agent registry. It is killed right before or right after the journal append
holding the ``handoff`` entry, or as billing's first model call is sent (the handoff is
durable by then: a barrier). Another process resumes the run from the store: billing
answers, triage's finished model call is never made again, and the journal holds exactly
one handoff. On a SQLite file and on PostgreSQL (one schema per kill point).
"""

from __future__ import annotations

import asyncio
import json
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.core import new_id
from bastion.stores import open_store
from tests._processes import run_worker
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_handoff_worker.py")
DSN = postgres_dsn()
KILL_POINTS = ("before:handoff", "after:handoff", "model:billing")


async def _worker(store: str, workdir: Path, mode: str, crash: str | None) -> tuple[int, str, str]:
    return await run_worker(WORKER, store, str(workdir), mode, crash=crash)


def _calls(workdir: Path) -> list[str]:
    return (workdir / "model_calls").read_text().split()


async def _kinds(store: str, workdir: Path) -> list[str]:
    run_id = (workdir / "run_id").read_text()
    async with open_store(store) as stores:
        return [e.kind for e in await stores.journal.read(run_id)]


async def _check(store: str, workdir: Path, point: str) -> None:
    code, _, err = await _worker(store, workdir, "start", point)
    assert code == -signal.SIGKILL, err
    durable = await _kinds(store, workdir)
    assert ("handoff" in durable) == (point != "before:handoff"), durable
    assert _calls(workdir).count("triage") == 1
    code, out, err = await _worker(store, workdir, "resume", None)
    assert code == 0, err
    assert json.loads(out) == {
        "status": "completed",
        "output": "Billing here (billing desk)",
        "last": "billing",
    }
    calls = _calls(workdir)
    assert calls.count("triage") == 1  # triage's finished call was not made again
    # billing's first call: made once, or (killed as it was sent) once more on resume
    assert calls.count("billing") == (2 if point == "model:billing" else 1)
    kinds = await _kinds(store, workdir)
    assert kinds.count("handoff") == 1
    assert kinds.count("model_response") == 2
    assert kinds[-1] == "run_ended"


async def _all(urls: dict[str, str], root: Path) -> None:
    async def one(point: str) -> tuple[str, BaseException | None]:
        workdir = root / point.replace(":", "_")
        workdir.mkdir()
        try:
            await _check(urls[point].replace("{dir}", str(workdir)), workdir, point)
        except Exception as exc:  # reported with its kill point below
            return point, exc
        return point, None

    outcomes = await asyncio.gather(*(one(point) for point in KILL_POINTS))
    assert {point: repr(exc) for point, exc in outcomes if exc is not None} == {}


@pytest.mark.timeout(180)
async def test_sqlite(tmp_path: Path) -> None:
    await _all(dict.fromkeys(KILL_POINTS, "sqlite:///{dir}/bastion.db"), tmp_path)


@pytest.fixture
async def postgres_urls() -> AsyncIterator[dict[str, str]]:
    import psycopg
    from psycopg import sql

    schemas = {point: new_id("bastion_handoff") for point in KILL_POINTS}
    sep = "&" if "?" in DSN else "?"
    yield {point: f"{DSN}{sep}schema={schema}" for point, schema in schemas.items()}
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        for schema in schemas.values():
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


@pytest.mark.timeout(180)
async def test_postgres(postgres_urls: dict[str, str], tmp_path: Path) -> None:
    await _all(postgres_urls, tmp_path)
