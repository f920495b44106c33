"""Crash during an approval wait: a worker is SIGKILLed while ``on_approval`` blocks.

The tool call waiting for its decision has no ``tool_call_started`` entry (that entry is
written right before the tool is invoked, after the gate), so the journal holds only
``run_started`` and the ``model_response`` that asked for the call; the run's status is
``running``. Resuming rebuilds the step and sends the call through the gate again: with an
``on_approval`` callback the callback is asked again, without one the run suspends
``awaiting_approval`` (an ordinary pending approval, not "outcome unknown") for a
``Directive``. Either way the tool runs exactly once, after the decision; the model is not
called again for the journaled step; the output is the uninterrupted run's. Against a
SQLite file and PostgreSQL (``BASTION_TEST_POSTGRES_DSN``, one schema per case).
ARCHITECTURE §5 (journal, replay, side-effect ledger).
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.core import new_id
from bastion.stores import open_store
from tests._processes import kill_at, run_json
from tests._services import postgres_dsn

WORKER = Path(__file__).with_name("_approval_worker.py")
DSN = postgres_dsn()
MODES = ("resume", "directive")


async def _run(store: str, workdir: Path, mode: str) -> dict[str, object]:
    found: dict[str, object] = await run_json(WORKER, store, str(workdir), mode)
    return found


async def _start_and_kill(store: str, workdir: Path) -> None:
    """Start the run and SIGKILL the worker once its callback is waiting for a decision."""
    # The worker prints "waiting <call id>" once its callback waits (or exits early).
    await kill_at(WORKER, store, str(workdir), "start", line="waiting c1")
    assert (workdir / "waiting").read_text() == "c1"


def _lines(path: Path) -> list[str]:
    return path.read_text().split() if path.exists() else []


async def _check(store: str, straight_store: str, root: Path, mode: str) -> None:
    straight = root / "straight"
    straight.mkdir()
    expected = await _run(straight_store, straight, "straight")
    assert expected["output"] == "Done: wrote 'hello'"

    workdir = root / mode
    workdir.mkdir()
    await _start_and_kill(store, workdir)
    run_id = (workdir / "run_id").read_text()
    # What the journal holds while the callback waits: the call was never started.
    async with open_store(store) as stores:
        entries = await stores.journal.read(run_id)
        record = await stores.journal.get_run(run_id)
    assert [e.kind for e in entries] == ["run_started", "model_response"]
    assert record is not None
    assert record.status == "running"
    assert not (workdir / "effects").exists()  # the tool did not run without a decision

    result = await _run(store, workdir, mode)
    assert result == expected  # identical final output (and status, steps)
    assert _lines(workdir / "effects") == ["hello"]  # ran exactly once, after approval
    assert _lines(workdir / "model_calls") == ["call", "call"]  # the first call not repeated
    if mode == "resume":  # the callback was asked again, in the second process
        assert _lines(workdir / "asked") == ["c1", "c1"]
        assert not (workdir / "decided").exists()
    else:  # no callback: the run suspended for a directive on the same call
        assert _lines(workdir / "asked") == ["c1"]
        assert _lines(workdir / "decided") == ["c1"]

    async with open_store(store) as stores:
        entries = await stores.journal.read(run_id)
        record = await stores.journal.get_run(run_id)
    kinds = [e.kind for e in entries]
    suspended = ["interrupt_raised", "interrupt_decided"] if mode == "directive" else []
    assert kinds == [
        "run_started",
        "model_response",
        *suspended,
        "tool_call_started",
        "tool_result",
        "model_response",
        "run_ended",
    ]
    assert [e.seq for e in entries] == list(range(1, len(entries) + 1))
    assert record is not None
    assert record.status == "completed"
    if mode == "directive":
        raised = entries[2].payload
        assert "Outcome unknown" not in json.dumps(raised)


@pytest.mark.parametrize("mode", MODES)
async def test_sqlite(tmp_path: Path, mode: str) -> None:
    await _check(
        f"sqlite:///{tmp_path}/bastion.db", f"sqlite:///{tmp_path}/straight.db", tmp_path, mode
    )


@pytest.fixture
async def postgres_urls() -> AsyncIterator[tuple[str, str]]:
    import psycopg
    from psycopg import sql

    schemas = (new_id("bastion_approval"), new_id("bastion_approval"))
    sep = "&" if "?" in DSN else "?"
    yield (f"{DSN}{sep}schema={schemas[0]}", f"{DSN}{sep}schema={schemas[1]}")
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        for schema in schemas:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )


@pytest.mark.parametrize("mode", MODES)
async def test_postgres(postgres_urls: tuple[str, str], tmp_path: Path, mode: str) -> None:
    await _check(*postgres_urls, tmp_path, mode)
