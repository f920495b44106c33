"""The SQLite backend: conformance (in-process and across real processes), WAL, migrations,
and an event loop that keeps running while another process holds the database lock.

ARCHITECTURE §5 (journal, SQLite default store).
"""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from pathlib import Path

import pytest

from bastion.stores import JournalConflict, NewEntry, open_store
from bastion.stores._sqlite_db import MIGRATIONS
from bastion.testing import ProcessStoreConformance, StoreConformance

from ._governed import GovernedProcesses


@pytest.fixture
def store_url(tmp_path: Path) -> str:
    return f"sqlite:///{tmp_path / 'nested' / 'bastion.db'}"


class TestSqliteStores(StoreConformance, ProcessStoreConformance):
    pass


async def test_file_is_wal_with_a_schema_version_and_survives_reopening(
    store_url: str, tmp_path: Path
) -> None:
    async with open_store(store_url) as stores:
        await stores.journal.append(
            "r", [NewEntry(kind="run_started", payload={"a": 1})], expected_seq=0, agent="x"
        )
    async with open_store(store_url) as stores:  # migrations are idempotent
        assert [e.payload for e in await stores.journal.read("r")] == [{"a": 1}]
    conn = sqlite3.connect(tmp_path / "nested" / "bastion.db")
    try:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        versions = conn.execute("SELECT version FROM bastion_schema").fetchall()
        assert versions == [(v,) for v in range(1, len(MIGRATIONS) + 1)]
    finally:
        conn.close()


async def test_database_work_runs_off_the_event_loop(store_url: str, tmp_path: Path) -> None:
    async with open_store(store_url) as stores:
        await stores.counters.add("k", 1)
        # Another process-like writer holds the write lock: our append must wait for it in
        # the store's worker thread while the event loop keeps serving other tasks.
        blocker = sqlite3.connect(tmp_path / "nested" / "bastion.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")
        loop_thread = threading.get_ident()
        append = asyncio.ensure_future(
            stores.journal.append("r", [NewEntry(kind="run_started")], expected_seq=0)
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(asyncio.shield(append), timeout=0.05)
        assert threading.get_ident() == loop_thread
        blocker.execute("ROLLBACK")
        blocker.close()
        [entry] = await append
        assert entry.seq == 1


async def test_closed_store_says_how_to_open_it(store_url: str) -> None:
    stores = open_store(store_url)
    from bastion.stores import StoreError

    with pytest.raises(StoreError, match="is not open; use `async with open_store"):
        await stores.journal.last_seq("r")


class TestSqliteGovernedProcesses(GovernedProcesses):
    pass


async def test_a_cancelled_call_completes_in_the_store_and_later_calls_still_work(
    store_url: str, tmp_path: Path
) -> None:
    async with open_store(store_url) as stores:
        await stores.counters.add("k", 1)
        blocker = sqlite3.connect(tmp_path / "nested" / "bastion.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the append below queues behind this lock
        append = asyncio.ensure_future(
            stores.journal.append("r", [NewEntry(kind="run_started")], expected_seq=0)
        )
        with pytest.raises(TimeoutError):
            await asyncio.wait_for(append, timeout=0.05)  # the caller gives up
        blocker.execute("ROLLBACK")
        blocker.close()
        # The write was already with the database: it lands whole, and the store serves on.
        assert [e.kind for e in await stores.journal.read("r")] == ["run_started"]
        with pytest.raises(JournalConflict, match="is at seq 1"):
            await stores.journal.append("r", [NewEntry(kind="run_started")], expected_seq=0)


async def test_queued_writes_share_one_commit_and_a_failing_one_undoes_only_itself(
    store_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from bastion.stores import _sqlite_db

    groups: list[int] = []
    run_group = _sqlite_db._run_group

    def counted(conn: sqlite3.Connection, group: list[_sqlite_db._Job]) -> None:
        groups.append(len(group))
        run_group(conn, group)

    monkeypatch.setattr(_sqlite_db, "_run_group", counted)
    async with open_store(store_url) as stores:
        await stores.journal.append("taken", [NewEntry(kind="run_started")], expected_seq=0)
        blocker = sqlite3.connect(tmp_path / "nested" / "bastion.db", isolation_level=None)
        blocker.execute("BEGIN IMMEDIATE")  # the writes below queue up behind this lock
        first = asyncio.ensure_future(stores.counters.add("k", 1))
        with pytest.raises(TimeoutError):  # the worker now waits for the lock, alone
            await asyncio.wait_for(asyncio.shield(first), timeout=0.05)
        appends = [
            asyncio.ensure_future(
                stores.journal.append(f"r{i}", [NewEntry(kind="run_started")], expected_seq=0)
            )
            for i in range(20)
        ]
        conflict = asyncio.ensure_future(
            stores.journal.append("taken", [NewEntry(kind="model_response")], expected_seq=0)
        )
        await asyncio.sleep(0)  # let the 21 writes reach the worker's queue
        blocker.execute("ROLLBACK")
        blocker.close()
        await first
        stored = await asyncio.gather(*appends)
        with pytest.raises(JournalConflict):
            await conflict
        assert [s[0].seq for s in stored] == [1] * 20
        for i in range(20):
            assert [e.kind for e in await stores.journal.read(f"r{i}")] == ["run_started"]
        assert [e.kind for e in await stores.journal.read("taken")] == ["run_started"]
    assert groups == [21]  # the 20 appends and the conflicting one: one commit
