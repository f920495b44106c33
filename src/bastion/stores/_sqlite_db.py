"""SQLite plumbing for ``_sqlite``: one connection on one dedicated thread, WAL, migrations.

Every statement runs on the store's own worker thread, so the event loop never blocks on disk
or on another process's lock. Writers take the database lock up front (``BEGIN IMMEDIATE``), so
a read-check-write sequence is atomic across processes; ``busy_timeout`` makes them queue.
"""

from __future__ import annotations

import asyncio
import contextlib
import queue
import sqlite3
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Concatenate, ParamSpec, TypeVar

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
    (
        """CREATE TABLE leases (
            key TEXT PRIMARY KEY, owner TEXT NOT NULL, acquired_at REAL NOT NULL,
            renewed_at REAL NOT NULL, expires_at REAL NOT NULL)""",
    ),
)


_Job = tuple[
    asyncio.AbstractEventLoop,
    "asyncio.Future[Any]",
    Callable[[], Any],
    "sqlite3.Connection | None",
]

MAX_GROUP = 64
"""Most store calls one group commit takes (the write lock is held while they run)."""


class _Worker:
    """One thread running submitted calls in order, answering on the caller's event loop.

    Lighter than ``run_in_executor`` (no ``concurrent.futures`` future to wrap): a store
    call costs one queue put and one ``call_soon_threadsafe``. The thread is a daemon, so a
    store nobody closed cannot hold the interpreter at exit; SQLite's commits are atomic
    even if the process stops mid-write.

    **Group commit.** Calls submitted with their connection may share one transaction:
    when several are queued, the worker runs them inside one ``BEGIN IMMEDIATE`` …
    ``COMMIT`` (each call's own :class:`transaction` becomes a savepoint, so a call that
    fails undoes only its own writes) and answers them all once the commit is done. Under
    load (many runs or sessions on one store) a commit, the costly part of a write, is paid
    once per group instead of once per call; a lone call runs as before.
    """

    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._held: list[_Job | None] = []  # taken from the queue but not part of a group
        self._thread = threading.Thread(target=self._serve, name="bastion-sqlite", daemon=True)
        self._thread.start()

    def submit(
        self, call: Callable[[], T], conn: sqlite3.Connection | None = None
    ) -> asyncio.Future[T]:
        """Run ``call`` on the thread; with ``conn``, it may share a group commit on it."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        self._jobs.put((loop, future, call, conn))
        return future

    def stop(self) -> None:
        """Let the thread end after the calls already submitted."""
        self._jobs.put(None)

    def _serve(self) -> None:
        while True:
            job = self._held.pop() if self._held else self._jobs.get()
            if job is None:
                return
            conn = job[3]
            group = [job]
            while conn is not None and len(group) < MAX_GROUP:
                try:
                    queued = self._jobs.get_nowait()
                except queue.Empty:
                    break
                if queued is None or queued[3] is not conn:
                    self._held.append(queued)  # runs after the group (None: stop after it)
                    break
                group.append(queued)
            if conn is None or len(group) == 1:
                _run_alone(job)
            else:
                _run_group(conn, group)


def _run_alone(job: _Job) -> None:
    loop, future, call, _ = job
    try:
        result = call()
    except BaseException as exc:  # handed to the caller, whatever it is
        _answer(loop, _fail, future, exc)
    else:
        _answer(loop, _settle, future, result)


def _run_group(conn: sqlite3.Connection, group: list[_Job]) -> None:
    """Run the calls in one transaction; answer them once it is committed."""
    try:
        conn.execute("BEGIN IMMEDIATE")
    except BaseException:  # no group: each call tries on its own (and reports its error)
        for job in group:
            _run_alone(job)
        return
    outcomes: list[tuple[_Job, bool, Any]] = []
    for job in group:
        try:
            outcomes.append((job, True, job[2]()))
        except BaseException as exc:  # its savepoint is rolled back; the others go on
            outcomes.append((job, False, exc))
    try:
        conn.execute("COMMIT")
    except BaseException as exc:  # nothing of the group was written
        with contextlib.suppress(sqlite3.Error):
            conn.execute("ROLLBACK")
        outcomes = [(job, False, exc) for job, _, _ in outcomes]
    for (loop, future, _, _), ok, value in outcomes:
        _answer(loop, _settle if ok else _fail, future, value)


def _answer(
    loop: asyncio.AbstractEventLoop,
    how: Callable[[asyncio.Future[Any], Any], None],
    future: asyncio.Future[Any],
    value: Any,
) -> None:
    with contextlib.suppress(RuntimeError):  # the caller's loop closed: nobody waits
        loop.call_soon_threadsafe(how, future, value)


def _settle(future: asyncio.Future[Any], result: Any) -> None:
    if not future.done():  # the caller may have been cancelled meanwhile
        future.set_result(result)


def _fail(future: asyncio.Future[Any], exc: BaseException) -> None:
    if not future.done():
        future.set_exception(exc)


class SqliteDatabase:
    """One SQLite connection owned by a single worker thread."""

    def __init__(self, path: str) -> None:
        self.path = path
        self._worker: _Worker | None = None
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
        worker = _Worker()
        self._worker = worker
        try:
            self._conn = await self._submit(self._connect)
        except BaseException:
            worker.stop()
            self._worker = None
            raise

    async def close(self) -> None:
        """Close the connection and stop the thread; idempotent."""
        worker, conn = self._worker, self._conn
        self._worker = self._conn = None
        self._opening = asyncio.Lock()  # bound to this loop once contended; a reopen may not be
        if worker is None:
            return
        if conn is not None:
            await worker.submit(conn.close)
        worker.stop()

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
        worker = self._worker
        assert worker is not None
        return await worker.submit(partial(fn, conn, *args, **kwargs), conn)

    async def _submit(self, call: Callable[[], T]) -> T:
        assert self._worker is not None
        return await self._worker.submit(call)

    def _connect(self) -> sqlite3.Connection:
        try:
            if self.path != ":memory:":
                Path(self.path).parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(self.path, isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        except (OSError, sqlite3.Error) as exc:  # an uncreatable directory, a bad path
            raise StoreError(f"Cannot open SQLite store {self.path!r}: {exc}") from exc
        try:
            conn.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
            _enable_wal(conn)
            # NORMAL in WAL mode: a commit survives a killed process; only power loss may
            # drop the last commits, never corrupt the file.
            conn.execute("PRAGMA synchronous = NORMAL")
            _migrate(conn)
        except sqlite3.Error as exc:  # not a database, read-only, locked for too long
            conn.close()
            raise StoreError(f"Cannot open SQLite store {self.path!r}: {exc}") from exc
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
    """``BEGIN IMMEDIATE`` … ``COMMIT``, or ``ROLLBACK`` on any exception.

    Inside a group commit (the connection is already in a transaction) it is a savepoint:
    released on success, rolled back on an exception, so only this call's writes are undone.
    """

    def __init__(self, conn: sqlite3.Connection) -> None:
        self._conn = conn
        self._nested = False

    def __enter__(self) -> sqlite3.Connection:
        self._nested = self._conn.in_transaction
        self._conn.execute("SAVEPOINT bastion_call" if self._nested else "BEGIN IMMEDIATE")
        return self._conn

    def __exit__(self, exc_type: type[BaseException] | None, *_: object) -> None:
        conn = self._conn
        if self._nested:
            if exc_type is not None:
                conn.execute("ROLLBACK TO bastion_call")
            conn.execute("RELEASE bastion_call")
        elif exc_type is None:
            conn.execute("COMMIT")
        else:
            conn.execute("ROLLBACK")
