"""SQLite plumbing for ``_sqlite``: one connection on one dedicated thread, WAL, migrations.

Every statement runs on the store's own worker thread, so the event loop never blocks on disk
or on another process's lock. Writers take the database lock up front (``BEGIN IMMEDIATE``), so
a read-check-write sequence is atomic across processes; ``busy_timeout`` makes them queue.
"""

from __future__ import annotations

import asyncio
import sqlite3
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from functools import partial
from pathlib import Path
from typing import Concatenate, ParamSpec, TypeVar

from ._types import StoreError

__all__ = ["MIGRATIONS", "SqliteDatabase"]

P = ParamSpec("P")
T = TypeVar("T")

BUSY_TIMEOUT_MS = 30_000

# Append only: each item upgrades the schema by one version. Never edit a released step.
MIGRATIONS: tuple[tuple[str, ...], ...] = (
    (
        """CREATE TABLE runs (
            run_id TEXT PRIMARY KEY, agent TEXT NOT NULL, status TEXT NOT NULL,
            last_seq INTEGER NOT NULL, created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
        "CREATE INDEX runs_by_created ON runs (created_at DESC, run_id DESC)",
        """CREATE TABLE journal (
            run_id TEXT NOT NULL, seq INTEGER NOT NULL, kind TEXT NOT NULL,
            schema_version INTEGER NOT NULL, payload TEXT NOT NULL, recorded_at REAL NOT NULL,
            PRIMARY KEY (run_id, seq))""",
        """CREATE TABLE sessions (
            session_id TEXT PRIMARY KEY, entry_count INTEGER NOT NULL, state TEXT,
            created_at REAL NOT NULL, updated_at REAL NOT NULL)""",
        """CREATE TABLE session_entries (
            session_id TEXT NOT NULL, entry_id TEXT NOT NULL, parent_id TEXT,
            kind TEXT NOT NULL, payload TEXT NOT NULL, position INTEGER NOT NULL,
            created_at REAL NOT NULL,
            PRIMARY KEY (session_id, entry_id), UNIQUE (session_id, position))""",
        """CREATE TABLE artifacts (
            position INTEGER PRIMARY KEY AUTOINCREMENT, artifact_id TEXT NOT NULL UNIQUE,
            run_id TEXT NOT NULL, role TEXT NOT NULL, seq INTEGER NOT NULL,
            content TEXT NOT NULL, sensitivity TEXT NOT NULL, tags TEXT NOT NULL,
            created_at REAL NOT NULL)""",
        "CREATE INDEX artifacts_by_run ON artifacts (run_id, position)",
        """CREATE TABLE counters (
            key TEXT NOT NULL, window_start INTEGER NOT NULL, value REAL NOT NULL,
            PRIMARY KEY (key, window_start))""",
    ),
)


class SqliteDatabase:
    """One SQLite connection owned by a single worker thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._executor: ThreadPoolExecutor | None = None
        self._conn: sqlite3.Connection | None = None
        # Agents sharing an unopened store all open it on their first run: one connection,
        # and no caller goes on before it is ready.
        self._opening = asyncio.Lock()

    async def open(self) -> None:
        """Start the worker thread, connect, enable WAL and migrate; idempotent.

        Concurrent callers wait for one opening.
        """
        if self._conn is not None:
            return
        async with self._opening:
            if self._conn is None:
                await self._open()

    async def _open(self) -> None:
        executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="bastion-sqlite")
        self._executor = executor
        try:
            self._conn = await self._submit(self._connect)
        except BaseException:
            executor.shutdown(wait=False)
            self._executor = None
            raise

    async def close(self) -> None:
        """Close the connection and stop the thread; idempotent."""
        executor, conn = self._executor, self._conn
        self._executor = self._conn = None
        self._opening = asyncio.Lock()  # bound to this loop once contended; a reopen may not be
        if executor is None:
            return
        if conn is not None:
            await asyncio.get_running_loop().run_in_executor(executor, conn.close)
        executor.shutdown(wait=False)

    async def run(
        self, fn: Callable[Concatenate[sqlite3.Connection, P], T], *args: P.args, **kwargs: P.kwargs
    ) -> T:
        """Run ``fn(connection, *args)`` on the worker thread and return its result."""
        conn = self._conn
        if conn is None:
            raise StoreError(
                f"SQLite store {self.path!r} is not open; use `async with open_store(url)` "
                "or `await stores.open()` first."
            )
        return await self._submit(partial(fn, conn, *args, **kwargs))

    async def _submit(self, call: Callable[[], T]) -> T:
        assert self._executor is not None
        return await asyncio.get_running_loop().run_in_executor(self._executor, call)

    def _connect(self) -> sqlite3.Connection:
        if self.path != ":memory:":
            Path(self.path).parent.mkdir(parents=True, exist_ok=True)
        try:
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        except sqlite3.Error as exc:
            raise StoreError(f"Cannot open SQLite store {self.path!r}: {exc}") from exc
        conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        _enable_wal(conn)
        # NORMAL in WAL mode: a commit survives a killed process; only power loss may drop
        # the last commits, never corrupt the file.
        conn.execute("PRAGMA synchronous = NORMAL")
        _migrate(conn)
        return conn


def _enable_wal(conn: sqlite3.Connection) -> None:
    """Switch the file to WAL (persistent: only the first opener changes it).

    Changing the journal mode needs an exclusive lock and SQLite reports ``database is
    locked`` at once, without the busy handler, while another process opens the same new
    file; so the switch is retried with a short backoff within the busy timeout.
    """
    deadline = time.monotonic() + BUSY_TIMEOUT_MS / 1000
    delay = 0.005
    while True:
        try:
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()
        except sqlite3.OperationalError as exc:
            if "locked" not in str(exc) or time.monotonic() >= deadline:
                raise
            time.sleep(delay)  # in the store's worker thread, never on the event loop
            delay = min(delay * 2, 0.2)
            continue
        if mode is not None and str(mode[0]).lower() == "wal":
            return
        raise StoreError(f"SQLite refused WAL mode (journal_mode is {mode!r}).")


def _migrate(conn: sqlite3.Connection) -> None:
    with transaction(conn):
        conn.execute("CREATE TABLE IF NOT EXISTS bastion_schema (version INTEGER NOT NULL)")
        row = conn.execute("SELECT MAX(version) FROM bastion_schema").fetchone()
        current = int(row[0]) if row and row[0] is not None else 0
        if current > len(MIGRATIONS):
            raise StoreError(
                f"SQLite store is at schema version {current}, newer than this Bastion "
                f"({len(MIGRATIONS)}); upgrade Bastion."
            )
        for version, statements in enumerate(MIGRATIONS[current:], start=current + 1):
            for statement in statements:
                conn.execute(statement)
            conn.execute("INSERT INTO bastion_schema (version) VALUES (?)", (version,))


class transaction:
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn

    def __enter__(self) -> sqlite3.Connection:
        self._conn.execute("BEGIN IMMEDIATE")
        return self._conn

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        if exc_type is None:
            self._conn.execute("COMMIT")
        else:
            self._conn.execute("ROLLBACK")
