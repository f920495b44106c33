"""Crash matrix: a worker process is SIGKILLed at each journal boundary; another resumes.

Runs against a SQLite file and against PostgreSQL (``BASTION_TEST_POSTGRES_DSN``, one schema
per test). The uninterrupted run journals 11 entries: run_started, model_response, two
tool_call_started (``lookup``, ``write_line``), two tool_result, model_response,
tool_call_started / tool_result (``charge``), model_response, run_ended. The journal commits
them in batches (write-behind, with a barrier before each tool runs and before the end), so
``after:N`` kills the worker right after the append that stored entry N, ``before:N`` right
before it. What the kill left durable is read back from the store, and the expectations
follow from it: a model call is sent again only if its answer was not durable; a
side-effecting call started without a durable result goes to a human.
ARCHITECTURE §5 (journal, replay, side-effect ledger).
"""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.core import new_id
from bastion.stores import open_store
from tests._processes import run_worker
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_worker.py")
EXPECTED = "Done: 42 | wrote 'hello' | charged 5"
DSN = postgres_dsn()
# One kill point per kind of boundary (entry numbers: see the module docstring).
KILL_POINTS = (
    "none",
    "before:1",  # nothing durable (the first model call may be made): no run to resume
    "after:1",  # run started (and maybe the first answer with it)
    "before:2",  # the model answered but its entry was not written: the call is re-sent
    "after:2",  # answer journaled, no tool started
    "after:3",  # the pure lookup started without a result: it runs again
    "after:4",  # write_line (side-effecting) started: outcome unknown, a human decides
    "before:6",  # lookup's result journaled, write_line's not: outcome unknown
    "after:6",  # the step's results journaled, the next model call not made
    "before:9",  # the idempotent charge started without a result: it runs again (same key)
    "after:10",  # final answer journaled, run_ended not
    "after:11",  # killed after the run ended
    # Killed as the next model call is sent: the acting tools' results of the step before
    # are durable (a barrier), so no human is asked; only that model call is made again.
    "model:2",  # after lookup + write_line (side-effecting)
    "model:3",  # after charge (external, idempotency key)
)
BARRIER_POINTS = ("model:2", "model:3")


async def _worker(store: str, workdir: Path, mode: str, crash: str | None) -> tuple[int, str, str]:
    return await run_worker(WORKER, store, str(workdir), mode, crash=crash)


async def _durable(store: str, workdir: Path) -> tuple[list[str], set[str], set[str]]:
    """What the killed worker left in the store: entry kinds, started and finished calls."""
    run_id = (workdir / "run_id").read_text()
    async with open_store(store) as stores:
        entries = await stores.journal.read(run_id)
    started = {str(e.payload["tool_call_id"]) for e in entries if e.kind == "tool_call_started"}
    ended = {str(e.payload["tool_call_id"]) for e in entries if e.kind == "tool_result"}
    return [e.kind for e in entries], started, ended


def _calls(workdir: Path) -> int:
    path = workdir / "model_calls"
    return len(path.read_text().split()) if path.exists() else 0


async def _check(store: str, workdir: Path, point: str) -> tuple[bool, bool]:
    """One kill point; returns whether a model call was re-sent and a human decided."""
    crash = None if point == "none" else point
    code, out, err = await _worker(store, workdir, "start", crash)
    repeated = unknown = False
    if crash is None:
        assert code == 0, err
    else:
        assert code == -signal.SIGKILL, err
        kinds, started, ended = await _durable(store, workdir)
        if not kinds:  # killed before the first commit: the run never existed
            code, out, err = await _worker(store, workdir, "resume", None)
            assert code != 0
            assert "No journal for run" in err
            assert not (workdir / "effects").exists()  # no tool ran before the first barrier
            return False, False
        # Only a model call whose answer was not durable may be sent again.
        repeated = _calls(workdir) > kinds.count("model_response")
        # write_line started without a durable result: a human decides (outcome unknown).
        unknown = "c2" in started and "c2" not in ended
        if point in BARRIER_POINTS:  # every started call's result was committed first
            assert started == ended, (started, ended)
            assert kinds[-1] == "tool_result", kinds
        code, out, err = await _worker(store, workdir, "resume", None)
        assert code == 0, err
    assert f'"output": "{EXPECTED}"' in out.replace("\\", ""), out  # identical final output
    # The side effect happened exactly once; the idempotent charge once.
    assert (workdir / "effects").read_text() == "hello\n"
    assert (workdir / "charges").read_text() == "charge-5\n"
    decided = (workdir / "decided").read_text() if (workdir / "decided").exists() else "0"
    assert decided == ("1" if unknown else "0")
    # No recorded model call was sent again: only a call killed before its entry repeats.
    assert _calls(workdir) == 3 + repeated
    # The store is consistent: dense seqs, one result per call, one run_ended, completed.
    run_id = (workdir / "run_id").read_text()
    async with open_store(store) as stores:
        entries = await stores.journal.read(run_id)
        record = await stores.journal.get_run(run_id)
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    kinds = [e.kind for e in entries]
    assert kinds[0] == "run_started"
    assert kinds[-1] == "run_ended"
    assert kinds.count("run_ended") == 1
    assert kinds.count("model_response") == 3
    results = [str(e.payload["tool_call_id"]) for e in entries if e.kind == "tool_result"]
    assert sorted(results) == ["c1", "c2", "c3"]
    assert record is not None
    assert record.status == "completed"
    assert record.last_seq == len(entries)
    event_seqs = [e.payload["event_seq"] for e in entries]
    assert all(isinstance(s, int) and s > 0 for s in event_seqs)
    return repeated, unknown


async def _matrix(urls: dict[str, str], root: Path) -> None:
    """Every kill point at once (each in its own store and directory); report all failures."""
    limit = asyncio.Semaphore(4)

    seen: set[str] = set()

    async def one(point: str) -> tuple[str, BaseException | None]:
        workdir = root / point.replace(":", "_")
        workdir.mkdir()
        async with limit:
            try:
                repeated, unknown = await _check(
                    urls[point].replace("{dir}", str(workdir)), workdir, point
                )
            except Exception as exc:  # reported with its kill point below
                return point, exc
        seen.update(["repeated"] * repeated + ["unknown"] * unknown)
        return point, None

    outcomes = await asyncio.gather(*(one(point) for point in KILL_POINTS))
    failures = {point: repr(exc) for point, exc in outcomes if exc is not None}
    assert not failures
    # The matrix reached both recoveries: a re-sent model call and an outcome unknown.
    assert seen == {"repeated", "unknown"}


# Each matrix starts some 40 worker processes (each imports bastion): on a loaded machine
# that alone can take a minute, past the suite's default per-test timeout.
MATRIX_TIMEOUT = pytest.mark.timeout(300)


@MATRIX_TIMEOUT
async def test_sqlite(tmp_path: Path) -> None:
    await _matrix(dict.fromkeys(KILL_POINTS, "sqlite:///{dir}/bastion.db"), tmp_path)


@pytest.fixture
async def postgres_urls() -> AsyncIterator[dict[str, str]]:
    import psycopg
    from psycopg import sql

    schemas = {point: new_id("bastion_crash") for point in KILL_POINTS}
    sep = "&" if "?" in DSN else "?"
    yield {point: f"{DSN}{sep}schema={schema}" for point, schema in schemas.items()}
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        for schema in schemas.values():
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


@MATRIX_TIMEOUT
async def test_postgres(postgres_urls: dict[str, str], tmp_path: Path) -> None:
    await _matrix(postgres_urls, tmp_path)
