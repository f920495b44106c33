"""SQLite backend (``sqlite:///path``), the embedded default: four stores over one file.

Each method validates on the event loop, then hands one synchronous function to the
database's worker thread (:class:`SqliteDatabase`); writes run inside ``BEGIN IMMEDIATE``.
"""

from __future__ import annotations

import json
import sqlite3
import time
from collections.abc import Mapping, Sequence
from typing import cast

from bastion.core import RunStatus, UserError

from ._checks import (
    check_append,
    check_key,
    check_max_artifacts,
    check_page,
    check_runs_query,
    check_session_entry,
    new_artifact,
    seq_bound,
)
from ._leases import SqliteLeaseStore
from ._ownership import SessionConflict
from ._protocols import Stores
from ._sqlite_db import SqliteDatabase, transaction
from ._types import (
    Artifact,
    CounterResult,
    EntryKind,
    JournalConflict,
    JournalEntry,
    JsonObject,
    NewEntry,
    RunPage,
    RunRecord,
    Sensitivity,
    SessionEntry,
    SessionInfo,
    decode_object,
    encode_object,
    from_timestamp,
    stored_entry,
)

__all__ = ["SqliteStores"]

_RUN_COLUMNS = "run_id, agent, status, last_seq, created_at, updated_at"


def _run(row: sqlite3.Row | tuple[object, ...]) -> RunRecord:
    run_id, agent, status, last_seq, created, updated = row
    return RunRecord(
        run_id=cast("str", run_id),
        agent=cast("str", agent),
        status=cast("RunStatus", status),
        last_seq=cast("int", last_seq),
        created_at=from_timestamp(cast("float", created)),
        updated_at=from_timestamp(cast("float", updated)),
    )


class SqliteJournalStore:
    """Run journals in the ``runs`` and ``journal`` tables."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        """Append entries after ``expected_seq``; see :class:`JournalStore`."""
        checked = check_append(run_id, entries, expected_seq, status)
        rows = [(run_id, e.seq, e.kind, e.schema_version, e.text) for e in checked]
        now = await self._db.run(
            _append, run_id, rows, expected_seq=expected_seq, agent=agent, status=status
        )
        return [stored_entry(seq, kind, version, text, now) for _, seq, kind, version, text in rows]

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        """Return entries after ``after_seq``."""
        rows = await self._db.run(_read, run_id, seq_bound(after_seq))
        return [stored_entry(*row) for row in rows]

    async def last_seq(self, run_id: str) -> int:
        """Return the last seq (0 if none)."""
        record = await self.get_run(run_id)
        return record.last_seq if record is not None else 0

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run's metadata."""
        row = await self._db.run(
            _fetch_one, f"SELECT {_RUN_COLUMNS} FROM runs WHERE run_id = ?", (run_id,)
        )
        return _run(row) if row is not None else None

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RunPage:
        """Return runs newest first."""
        check_runs_query(status, limit, offset)
        sql = f"SELECT {_RUN_COLUMNS} FROM runs WHERE (? IS NULL OR status = ?) "
        sql += "AND (? IS NULL OR agent = ?) ORDER BY created_at DESC, run_id DESC LIMIT ? OFFSET ?"
        rows = await self._db.run(
            _fetch_all, sql, (status, status, agent, agent, limit + 1, offset)
        )
        runs = [_run(row) for row in rows[:limit]]
        return RunPage(runs=runs, next_offset=offset + limit if len(rows) > limit else None)

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete these runs' journal rows and metadata; return how many runs existed."""
        return await self._db.run(_delete, ("journal", "runs"), "run_id", sorted(set(run_ids)))


def _delete(conn: sqlite3.Connection, tables: tuple[str, str], key: str, ids: list[str]) -> int:
    """Delete ``ids`` from the child table then the parent; the parent's count."""
    if not ids:
        return 0
    marks = ",".join("?" * len(ids))
    child, parent = tables
    with transaction(conn):
        conn.execute(f"DELETE FROM {child} WHERE {key} IN ({marks})", ids)
        return conn.execute(f"DELETE FROM {parent} WHERE {key} IN ({marks})", ids).rowcount


def _append(
    conn: sqlite3.Connection,
    run_id: str,
    rows: list[tuple[str, int, str, int, str]],
    *,
    expected_seq: int,
    agent: str,
    status: str | None,
) -> float:
    with transaction(conn):
        now = time.time()
        found = conn.execute("SELECT last_seq FROM runs WHERE run_id = ?", (run_id,)).fetchone()
        actual = int(found[0]) if found is not None else 0
        if actual != expected_seq:
            raise JournalConflict(run_id, expected_seq=expected_seq, actual_seq=actual)
        if found is None:
            conn.execute(
                f"INSERT INTO runs ({_RUN_COLUMNS}) VALUES (?, ?, ?, 0, ?, ?)",
                (run_id, agent, status or "running", now, now),
            )
        conn.executemany(
            "INSERT INTO journal (run_id, seq, kind, schema_version, payload, recorded_at) "
            "VALUES (?, ?, ?, ?, ?, ?)",
            [(*row, now) for row in rows],
        )
        conn.execute(
            "UPDATE runs SET last_seq = ?, updated_at = ?, status = COALESCE(?, status) "
            "WHERE run_id = ?",
            (rows[-1][1], now, status, run_id),
        )
    return now


def _read(
    conn: sqlite3.Connection, run_id: str, after_seq: int
) -> list[tuple[int, EntryKind, int, str, float]]:
    return conn.execute(
        "SELECT seq, kind, schema_version, payload, recorded_at FROM journal "
        "WHERE run_id = ? AND seq > ? ORDER BY seq",
        (run_id, after_seq),
    ).fetchall()


def _fetch_one(
    conn: sqlite3.Connection, sql: str, params: tuple[object, ...]
) -> tuple[object, ...] | None:
    return conn.execute(sql, params).fetchone()


def _fetch_all(
    conn: sqlite3.Connection, sql: str, params: tuple[object, ...]
) -> list[tuple[object, ...]]:
    return conn.execute(sql, params).fetchall()


class SqliteSessionStore:
    """Session transcripts in ``session_entries``, state in ``sessions``."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def append(
        self,
        session_id: str,
        *,
        kind: str,
        payload: Mapping[str, object],
        parent_id: str | None = None,
        entry_id: str | None = None,
        expect_head: bool = False,
    ) -> SessionEntry:
        """Append a transcript entry (compare-and-set on the head with ``expect_head``)."""
        text, entry_id = check_session_entry(session_id, kind, payload, entry_id)
        position, now = await self._db.run(
            _session_append,
            session_id,
            entry_id=entry_id,
            parent_id=parent_id,
            kind=kind,
            text=text,
            expect_head=expect_head,
        )
        return SessionEntry(
            session_id=session_id,
            entry_id=entry_id,
            parent_id=parent_id,
            kind=kind,
            payload=decode_object(text),
            position=position,
            created_at=from_timestamp(now),
        )

    async def entries(self, session_id: str) -> list[SessionEntry]:
        """Return the transcript in insertion order."""
        rows = await self._db.run(
            _fetch_all,
            "SELECT entry_id, parent_id, kind, payload, position, created_at FROM session_entries "
            "WHERE session_id = ? ORDER BY position",
            (session_id,),
        )
        return [
            SessionEntry(
                session_id=session_id,
                entry_id=cast("str", entry_id),
                parent_id=cast("str | None", parent_id),
                kind=cast("str", kind),
                payload=decode_object(cast("str", payload)),
                position=cast("int", position),
                created_at=from_timestamp(cast("float", at)),
            )
            for entry_id, parent_id, kind, payload, position, at in rows
        ]

    async def get_state(self, session_id: str) -> JsonObject | None:
        """Return the state object."""
        row = await self._db.run(
            _fetch_one, "SELECT state FROM sessions WHERE session_id = ?", (session_id,)
        )
        if row is None or row[0] is None:
            return None
        return decode_object(cast("str", row[0]))

    async def put_state(self, session_id: str, state: Mapping[str, object]) -> None:
        """Replace the state object."""
        check_key(session_id, "session_id")
        text = encode_object(state, "Session state")
        await self._db.run(_put_state, session_id, text)

    async def list_sessions(self, *, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Return sessions newest first."""
        check_page(limit, offset)
        rows = await self._db.run(
            _fetch_all,
            "SELECT session_id, entry_count, created_at, updated_at FROM sessions "
            "ORDER BY created_at DESC, session_id DESC LIMIT ? OFFSET ?",
            (limit, offset),
        )
        return [
            SessionInfo(
                session_id=cast("str", sid),
                entry_count=cast("int", count),
                created_at=from_timestamp(cast("float", created)),
                updated_at=from_timestamp(cast("float", updated)),
            )
            for sid, count, created, updated in rows
        ]

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions' entries and state; return how many sessions existed."""
        tables = ("session_entries", "sessions")
        return await self._db.run(_delete, tables, "session_id", sorted(set(session_ids)))


def _touch_session(conn: sqlite3.Connection, session_id: str, now: float) -> None:
    conn.execute(
        "INSERT INTO sessions (session_id, entry_count, state, created_at, updated_at) "
        "VALUES (?, 0, NULL, ?, ?) ON CONFLICT (session_id) DO UPDATE SET updated_at = ?",
        (session_id, now, now, now),
    )


def _session_append(
    conn: sqlite3.Connection,
    session_id: str,
    *,
    entry_id: str,
    parent_id: str | None,
    kind: str,
    text: str,
    expect_head: bool,
) -> tuple[int, float]:
    with transaction(conn):
        now = time.time()
        ids = "SELECT 1 FROM session_entries WHERE session_id = ? AND entry_id = ?"
        if parent_id is not None and conn.execute(ids, (session_id, parent_id)).fetchone() is None:
            raise UserError(
                f"Session {session_id!r} has no entry {parent_id!r}; parent_id must name an "
                "entry of the same session, or be None for a root."
            )
        if conn.execute(ids, (session_id, entry_id)).fetchone() is not None:
            raise UserError(
                f"Session {session_id!r} already has an entry {entry_id!r}; entry ids are unique."
            )
        if expect_head:  # the write lock is held (BEGIN IMMEDIATE): no one appends meanwhile
            row = conn.execute(
                "SELECT entry_id FROM session_entries WHERE session_id = ? "
                "ORDER BY position DESC LIMIT 1",
                (session_id,),
            ).fetchone()
            head = cast("str | None", row[0] if row is not None else None)
            if head != parent_id:
                raise SessionConflict(session_id, expected_head=parent_id, actual_head=head)
        _touch_session(conn, session_id, now)
        position = int(
            conn.execute(
                "UPDATE sessions SET entry_count = entry_count + 1 WHERE session_id = ? "
                "RETURNING entry_count",
                (session_id,),
            ).fetchone()[0]
        )
        conn.execute(
            "INSERT INTO session_entries (session_id, entry_id, parent_id, kind, payload, "
            "position, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
            (session_id, entry_id, parent_id, kind, text, position, now),
        )
    return position, now


def _put_state(conn: sqlite3.Connection, session_id: str, text: str) -> None:
    with transaction(conn):
        _touch_session(conn, session_id, time.time())
        conn.execute("UPDATE sessions SET state = ? WHERE session_id = ?", (text, session_id))


class SqliteArtifactStore:
    """Progress artifacts in the ``artifacts`` table."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def write(
        self,
        run_id: str,
        content: str,
        *,
        role: str,
        seq: int,
        sensitivity: Sensitivity = "internal",
        tags: Sequence[str] = (),
    ) -> Artifact:
        """Store one artifact."""
        artifact = new_artifact(run_id, content, role, seq, sensitivity, tags)
        await self._db.run(_write_artifact, artifact)
        return artifact

    async def read(
        self,
        *,
        run_id: str | None = None,
        role: str | None = None,
        since_seq: int = 0,
        max_artifacts: int | None = None,
    ) -> list[Artifact]:
        """Return matching artifacts in the order written."""
        check_max_artifacts(max_artifacts)
        sql = (
            "SELECT artifact_id, run_id, role, seq, content, sensitivity, tags, created_at "
            "FROM artifacts WHERE (? IS NULL OR run_id = ?) AND (? IS NULL OR role = ?) "
            "AND seq > ? ORDER BY position DESC LIMIT ?"
        )
        limit = -1 if max_artifacts is None else seq_bound(max_artifacts)
        rows = await self._db.run(
            _fetch_all, sql, (run_id, run_id, role, role, seq_bound(since_seq), limit)
        )
        rows.reverse()
        return [
            Artifact(
                artifact_id=cast("str", aid),
                run_id=cast("str", rid),
                role=cast("str", r),
                seq=cast("int", s),
                content=cast("str", content),
                sensitivity=cast("Sensitivity", sens),
                tags=tuple(cast("list[str]", json.loads(cast("str", tags)))),
                created_at=from_timestamp(cast("float", at)),
            )
            for aid, rid, r, s, content, sens, tags, at in rows
        ]


def _write_artifact(conn: sqlite3.Connection, a: Artifact) -> None:
    conn.execute(
        "INSERT INTO artifacts (artifact_id, run_id, role, seq, content, sensitivity, tags, "
        "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        (
            a.artifact_id,
            a.run_id,
            a.role,
            a.seq,
            a.content,
            a.sensitivity,
            json.dumps(list(a.tags)),
            a.created_at.timestamp(),
        ),
    )


class SqliteCounterStore:
    """Counters in the ``counters`` table; check-and-add under ``BEGIN IMMEDIATE``."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def get(self, key: str, *, window_start: int = 0) -> float:
        """Return the value."""
        row = await self._db.run(
            _fetch_one,
            "SELECT value FROM counters WHERE key = ? AND window_start = ?",
            (key, window_start),
        )
        return float(cast("float", row[0])) if row is not None else 0.0

    async def add(self, key: str, amount: float, *, window_start: int = 0) -> float:
        """Add unconditionally."""
        check_key(key, "Counter key")
        result = await self._db.run(_try_add, key, float(amount), None, window_start)
        return result.value

    async def try_add(
        self, key: str, amount: float, *, maximum: float, window_start: int = 0
    ) -> CounterResult:
        """Add if the result stays within ``maximum``."""
        check_key(key, "Counter key")
        return await self._db.run(_try_add, key, float(amount), float(maximum), window_start)

    async def reset(self, key: str, *, window_start: int | None = None) -> None:
        """Delete one window or all windows of ``key``."""
        await self._db.run(
            _fetch_all,
            "DELETE FROM counters WHERE key = ? AND (? IS NULL OR window_start = ?)",
            (key, window_start, window_start),
        )


def _try_add(
    conn: sqlite3.Connection, key: str, amount: float, maximum: float | None, window_start: int
) -> CounterResult:
    with transaction(conn):
        row = conn.execute(
            "SELECT value FROM counters WHERE key = ? AND window_start = ?", (key, window_start)
        ).fetchone()
        value = float(row[0]) if row is not None else 0.0
        if maximum is not None and value + amount > maximum:
            return CounterResult(accepted=False, value=value)
        conn.execute(
            "INSERT INTO counters (key, window_start, value) VALUES (?, ?, ?) "
            "ON CONFLICT (key, window_start) DO UPDATE SET value = ?",
            (key, window_start, value + amount, value + amount),
        )
    return CounterResult(accepted=True, value=value + amount)


class SqliteStores(Stores):
    """The four stores in one SQLite file (``sqlite:///relative`` or ``sqlite:////absolute``)."""

    def __init__(self, path: str) -> None:
        self.url = f"sqlite:///{path}"
        self.path = path
        self._db = SqliteDatabase(path)
        self.journal = SqliteJournalStore(self._db)
        self.sessions = SqliteSessionStore(self._db)
        self.artifacts = SqliteArtifactStore(self._db)
        self.counters = SqliteCounterStore(self._db)
        self.leases = SqliteLeaseStore(self._db)

    async def open(self) -> None:
        """Open the file (creating its directory), enable WAL and migrate."""
        await self._db.open()

    async def close(self) -> None:
        """Close the connection and its thread."""
        await self._db.close()
