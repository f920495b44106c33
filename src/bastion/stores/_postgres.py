"""PostgreSQL backend (``postgresql://…``): psycopg 3 async over an ``AsyncConnectionPool``.

All tables live in one schema (``?schema=name`` in the URL, default ``bastion``), set as the
``search_path`` of every pooled connection. Appends lock the run's row with a conditional
``UPDATE … WHERE last_seq = expected``; counters check-and-add with one conditional ``UPDATE``.
psycopg is imported lazily: ``pip install 'bastion[postgres]'``.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

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
from ._leases import PostgresLeaseStore
from ._ownership import SessionConflict
from ._pg_batch import Batcher
from ._postgres_schema import migrate
from ._protocols import Stores
from ._types import (
    Artifact,
    CounterResult,
    JournalConflict,
    JournalEntry,
    JsonObject,
    NewEntry,
    RunPage,
    RunRecord,
    Sensitivity,
    SessionEntry,
    SessionInfo,
    StoreError,
    decode_object,
    encode_object,
    from_timestamp,
    stored_entry,
)

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor
    from psycopg_pool import AsyncConnectionPool

__all__ = ["POOL_SIZE", "PostgresStores"]

POOL_SIZE = 10
"""Connections per opened store, unless the URL sets ``max_connections``."""


async def _rowcount(cur: AsyncCursor[tuple[Any, ...]]) -> int:
    return cur.rowcount


async def _one(cur: AsyncCursor[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    return await cur.fetchone()


async def _all(cur: AsyncCursor[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    return await cur.fetchall()


def _run(row: tuple[Any, ...]) -> RunRecord:
    run_id, agent, status, last_seq, created, updated = row
    return RunRecord(
        run_id=run_id,
        agent=agent,
        status=status,
        last_seq=int(last_seq),
        created_at=from_timestamp(created),
        updated_at=from_timestamp(updated),
    )


# The payloads go as a binary text[] (``%(payloads)b``): psycopg's text-format array
# dumper escapes every quote of every JSON payload with a Python regex substitution, which
# cost more client CPU than the rest of the append.
# A journal append is one statement: a data-modifying CTE claims the run (creates it, or
# moves its last_seq from the expected value) and the batch is inserted only if the claim
# succeeded. A concurrent writer's UPDATE waits on the row lock, then re-checks last_seq
# against the committed value; a concurrent creator waits, then finds the run (ON CONFLICT
# DO NOTHING). Either way the loser inserts nothing and learns so from the row count.
_INSERT_CLAIMED_ENTRIES = (
    "INSERT INTO journal (run_id, seq, kind, schema_version, payload, recorded_at) "
    "SELECT %(run)s, u.seq, u.kind, u.version, u.payload, %(now)s FROM unnest("
    "%(seqs)s::bigint[], %(kinds)s::text[], %(versions)s::integer[], %(payloads)b::text[]) "
    "AS u(seq, kind, version, payload) WHERE EXISTS (SELECT 1 FROM claimed)"
)
_APPEND_NEW_RUN = (
    "WITH claimed AS (INSERT INTO runs (run_id, agent, status, last_seq, created_at, "
    "updated_at) VALUES (%(run)s, %(agent)s, %(status)s, %(last)s, %(now)s, %(now)s) "
    "ON CONFLICT (run_id) DO NOTHING RETURNING run_id) " + _INSERT_CLAIMED_ENTRIES
)
_APPEND_TO_RUN = (
    "WITH claimed AS (UPDATE runs SET last_seq = %(last)s, updated_at = %(now)s, "
    "status = COALESCE(%(new_status)s, status) "
    "WHERE run_id = %(run)s AND last_seq = %(expected)s RETURNING run_id) "
    + _INSERT_CLAIMED_ENTRIES
)


# A session append is one statement. It checks the parent and the entry id, and only if
# both are fine counts the entry on the session row (creating it; the row lock queues
# concurrent appends to one session, so positions are dense) and inserts it. The checks see
# the entries committed when the statement began: a parent is always appended, and its id
# known, before a child names it. Two appends racing with one explicit entry id: the second
# hits the primary key (unique_violation) and nothing of it is written. The session row
# keeps the head (last entry): a compare-and-set append (``cas``) counts the entry only if
# the head, re-read on the locked row, is its parent; else nothing is written.
_APPEND_SESSION_ENTRY = (
    "WITH checked AS (SELECT "
    "(%(parent)s::text IS NULL OR EXISTS (SELECT 1 FROM session_entries "
    "WHERE session_id = %(session)s AND entry_id = %(parent)s)) AS parent_ok, "
    "EXISTS (SELECT 1 FROM session_entries "
    "WHERE session_id = %(session)s AND entry_id = %(entry)s) AS taken), "
    "counted AS (INSERT INTO sessions AS s (session_id, entry_count, state, created_at, "
    "updated_at, head) SELECT %(session)s, 1, NULL, %(now)s, %(now)s, %(entry)s FROM checked "
    "WHERE parent_ok AND NOT taken ON CONFLICT (session_id) DO UPDATE SET "
    "entry_count = s.entry_count + 1, updated_at = EXCLUDED.updated_at, head = EXCLUDED.head "
    "WHERE NOT %(cas)s OR s.head IS NOT DISTINCT FROM %(parent)s::text RETURNING entry_count), "
    "added AS (INSERT INTO session_entries (session_id, entry_id, parent_id, kind, payload, "
    "position, created_at) SELECT %(session)s, %(entry)s, %(parent)s, %(kind)s, %(payload)s, "
    "entry_count, %(now)s FROM counted RETURNING position) "
    "SELECT parent_ok, taken, (SELECT position FROM added) FROM checked"
)
_UNIQUE_VIOLATION = "23505"


class _Base:
    def __init__(self, owner: PostgresStores) -> None:
        self._owner = owner

    @property
    def _pool(self) -> AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]]:
        return self._owner.pool

    async def _delete(self, tables: tuple[str, str], key: str, ids: Sequence[str]) -> int:
        """Delete ``ids`` from the child table then the parent, in one transaction."""
        unique = sorted(set(ids))
        if not unique:
            return 0
        child, parent = tables
        async with self._pool.connection() as conn, conn.transaction():
            await conn.execute(f"DELETE FROM {child} WHERE {key} = ANY(%s)", (unique,))  # pyright: ignore[reportArgumentType]
            cur = await conn.execute(f"DELETE FROM {parent} WHERE {key} = ANY(%s)", (unique,))  # pyright: ignore[reportArgumentType]
            return cur.rowcount


class PostgresJournalStore(_Base):
    """Run journals in the ``runs`` and ``journal`` tables."""

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
        now = time.time()
        last = checked[-1].seq
        # One statement (see _APPEND_*): one round trip, and its own transaction.
        statement = _APPEND_NEW_RUN if expected_seq == 0 else _APPEND_TO_RUN
        params = {
            "run": run_id,
            "agent": agent,
            "status": status or "running",
            "new_status": status,
            "last": last,
            "expected": expected_seq,
            "now": now,
            "seqs": [e.seq for e in checked],
            "kinds": [e.kind for e in checked],
            "versions": [e.schema_version for e in checked],
            "payloads": [e.text for e in checked],
        }
        if await self._owner.batcher.run(statement, params, _rowcount) != len(checked):
            record = await self.get_run(run_id)
            actual = record.last_seq if record is not None else 0
            raise JournalConflict(run_id, expected_seq=expected_seq, actual_seq=actual)
        return [stored_entry(e.seq, e.kind, e.schema_version, e.text, now) for e in checked]

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        """Return entries after ``after_seq``."""
        rows = await self._owner.batcher.run(
            "SELECT seq, kind, schema_version, payload, recorded_at FROM journal "
            "WHERE run_id = %s AND seq > %s ORDER BY seq",
            (run_id, seq_bound(after_seq)),
            _all,
        )
        return [stored_entry(*row) for row in rows]

    async def last_seq(self, run_id: str) -> int:
        """Return the last seq (0 if none)."""
        record = await self.get_run(run_id)
        return record.last_seq if record is not None else 0

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run's metadata."""
        row = await self._owner.batcher.run(
            "SELECT run_id, agent, status, last_seq, created_at, updated_at FROM runs "
            "WHERE run_id = %s",
            (run_id,),
            _one,
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
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT run_id, agent, status, last_seq, created_at, updated_at FROM runs "
                "WHERE (%s::text IS NULL OR status = %s) AND (%s::text IS NULL OR agent = %s) "
                "ORDER BY created_at DESC, run_id DESC LIMIT %s OFFSET %s",
                (status, status, agent, agent, limit + 1, offset),
            )
            rows = await cur.fetchall()
        runs = [_run(row) for row in rows[:limit]]
        return RunPage(runs=runs, next_offset=offset + limit if len(rows) > limit else None)

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete these runs' journal rows and metadata; return how many runs existed."""
        return await self._delete(("journal", "runs"), "run_id", run_ids)


class PostgresSessionStore(_Base):
    """Session transcripts in ``session_entries``, state in ``sessions``."""

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
        now = time.time()
        params = {
            "session": session_id,
            "entry": entry_id,
            "parent": parent_id,
            "kind": kind,
            "payload": text,
            "now": now,
            "cas": expect_head,
        }
        try:
            async with self._pool.connection() as conn:
                cur = await conn.execute(_APPEND_SESSION_ENTRY, params)
                row = await cur.fetchone()
        except Exception as exc:
            if getattr(exc, "sqlstate", None) == _UNIQUE_VIOLATION:  # a concurrent twin won
                raise _taken(session_id, entry_id) from exc
            raise
        assert row is not None
        parent_ok, taken, position = row
        if not parent_ok:
            raise UserError(
                f"Session {session_id!r} has no entry {parent_id!r}; parent_id must name an "
                "entry of the same session, or be None for a root."
            )
        if taken:
            raise _taken(session_id, entry_id)
        if position is None:  # the compare-and-set lost: the head moved
            async with self._pool.connection() as conn:
                cur = await conn.execute(
                    "SELECT head FROM sessions WHERE session_id = %s", (session_id,)
                )
                head = await cur.fetchone()
            actual = head[0] if head is not None else None
            raise SessionConflict(session_id, expected_head=parent_id, actual_head=actual)
        position = int(position)
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
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT entry_id, parent_id, kind, payload, position, created_at "
                "FROM session_entries WHERE session_id = %s ORDER BY position",
                (session_id,),
            )
            rows = await cur.fetchall()
        return [
            SessionEntry(
                session_id=session_id,
                entry_id=eid,
                parent_id=pid,
                kind=kind,
                payload=decode_object(payload),
                position=int(position),
                created_at=from_timestamp(at),
            )
            for eid, pid, kind, payload, position, at in rows
        ]

    async def get_state(self, session_id: str) -> JsonObject | None:
        """Return the state object."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT state FROM sessions WHERE session_id = %s", (session_id,)
            )
            row = await cur.fetchone()
        return decode_object(row[0]) if row is not None and row[0] is not None else None

    async def put_state(self, session_id: str, state: Mapping[str, object]) -> None:
        """Replace the state object."""
        check_key(session_id, "session_id")
        text = encode_object(state, "Session state")
        now = time.time()
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO sessions (session_id, entry_count, state, created_at, updated_at) "
                "VALUES (%s, 0, %s, %s, %s) ON CONFLICT (session_id) "
                "DO UPDATE SET state = EXCLUDED.state, updated_at = EXCLUDED.updated_at",
                (session_id, text, now, now),
            )

    async def list_sessions(self, *, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Return sessions newest first."""
        check_page(limit, offset)
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT session_id, entry_count, created_at, updated_at FROM sessions "
                "ORDER BY created_at DESC, session_id DESC LIMIT %s OFFSET %s",
                (limit, offset),
            )
            rows = await cur.fetchall()
        return [
            SessionInfo(
                session_id=sid,
                entry_count=int(count),
                created_at=from_timestamp(created),
                updated_at=from_timestamp(updated),
            )
            for sid, count, created, updated in rows
        ]

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions' entries and state; return how many sessions existed."""
        return await self._delete(("session_entries", "sessions"), "session_id", session_ids)


def _taken(session_id: str, entry_id: str) -> UserError:
    return UserError(
        f"Session {session_id!r} already has an entry {entry_id!r}; entry ids are unique."
    )


class PostgresArtifactStore(_Base):
    """Progress artifacts in the ``artifacts`` table."""

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
        await self._owner.batcher.run(
            "INSERT INTO artifacts (artifact_id, run_id, role, seq, content, sensitivity, "
            "tags, created_at) VALUES (%s, %s, %s, %s, %s, %s, %s, %s)",
            (
                artifact.artifact_id,
                run_id,
                role,
                seq,
                content,
                sensitivity,
                json.dumps(list(artifact.tags)),
                artifact.created_at.timestamp(),
            ),
            _rowcount,
        )
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
        rows = await self._owner.batcher.run(
            "SELECT artifact_id, run_id, role, seq, content, sensitivity, tags, created_at "
            "FROM artifacts WHERE (%s::text IS NULL OR run_id = %s) "
            "AND (%s::text IS NULL OR role = %s) AND seq > %s "
            "ORDER BY position DESC LIMIT %s",
            (
                run_id,
                run_id,
                role,
                role,
                seq_bound(since_seq),
                None if max_artifacts is None else seq_bound(max_artifacts),
            ),
            _all,
        )
        rows.reverse()
        return [
            Artifact(
                artifact_id=aid,
                run_id=rid,
                role=r,
                seq=int(s),
                content=content,
                sensitivity=sens,
                tags=tuple(json.loads(tags)),
                created_at=from_timestamp(at),
            )
            for aid, rid, r, s, content, sens, tags, at in rows
        ]


class PostgresCounterStore(_Base):
    """Counters in the ``counters`` table; check-and-add is one conditional ``UPDATE``."""

    async def get(self, key: str, *, window_start: int = 0) -> float:
        """Return the value."""
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "SELECT value FROM counters WHERE key = %s AND window_start = %s",
                (key, window_start),
            )
            row = await cur.fetchone()
        return float(row[0]) if row is not None else 0.0

    async def add(self, key: str, amount: float, *, window_start: int = 0) -> float:
        """Add unconditionally."""
        check_key(key, "Counter key")
        async with self._pool.connection() as conn:
            cur = await conn.execute(
                "INSERT INTO counters (key, window_start, value) VALUES (%s, %s, %s) "
                "ON CONFLICT (key, window_start) DO UPDATE "
                "SET value = counters.value + EXCLUDED.value RETURNING value",
                (key, window_start, float(amount)),
            )
            row = await cur.fetchone()
        assert row is not None
        return float(row[0])

    async def try_add(
        self, key: str, amount: float, *, maximum: float, window_start: int = 0
    ) -> CounterResult:
        """Add if the result stays within ``maximum``."""
        check_key(key, "Counter key")
        async with self._pool.connection() as conn:
            await conn.execute(
                "INSERT INTO counters (key, window_start, value) VALUES (%s, %s, 0) "
                "ON CONFLICT (key, window_start) DO NOTHING",
                (key, window_start),
            )
            # The row lock makes a concurrent UPDATE re-check the WHERE on the new value.
            cur = await conn.execute(
                "UPDATE counters SET value = value + %s WHERE key = %s AND window_start = %s "
                "AND value + %s <= %s RETURNING value",
                (float(amount), key, window_start, float(amount), float(maximum)),
            )
            row = await cur.fetchone()
            if row is not None:
                return CounterResult(accepted=True, value=float(row[0]))
            cur = await conn.execute(
                "SELECT value FROM counters WHERE key = %s AND window_start = %s",
                (key, window_start),
            )
            current = await cur.fetchone()
        return CounterResult(accepted=False, value=float(current[0]) if current else 0.0)

    async def reset(self, key: str, *, window_start: int | None = None) -> None:
        """Delete one window or all windows of ``key``."""
        async with self._pool.connection() as conn:
            await conn.execute(
                "DELETE FROM counters WHERE key = %s AND (%s::bigint IS NULL OR window_start = %s)",
                (key, window_start, window_start),
            )


class PostgresStores(Stores):
    """The four stores in one PostgreSQL schema, over a connection pool."""

    def __init__(
        self,
        dsn: str,
        *,
        schema: str = "bastion",
        display_url: str = "",
        max_size: int = POOL_SIZE,
    ) -> None:
        if not schema.replace("_", "a").isalnum() or not schema[0].isalpha():
            raise UserError(
                f"PostgreSQL schema name {schema!r} is not a plain identifier; use letters, "
                "digits and underscores, starting with a letter."
            )
        self.url = display_url or "postgresql://"
        self.schema = schema
        self._dsn = dsn
        self._max_size = max_size
        self._pool: AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]] | None = None
        self._batcher: Batcher | None = None
        self._lease_batcher: Batcher | None = None
        # Agents sharing an unopened store all open it on their first run: one pool, not many.
        self._opening = asyncio.Lock()
        self.journal = PostgresJournalStore(self)
        self.sessions = PostgresSessionStore(self)
        self.artifacts = PostgresArtifactStore(self)
        self.counters = PostgresCounterStore(self)
        self.leases = PostgresLeaseStore(self)

    @property
    def pool(self) -> AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]]:
        """The open connection pool."""
        if self._pool is None:
            raise StoreError(
                f"PostgreSQL store {self.url!r} is not open; use `async with open_store(url)` "
                "or `await stores.open()` first."
            )
        return self._pool

    @property
    def batcher(self) -> Batcher:
        """Single statements of many callers, sent together (see ``_pg_batch``)."""
        if self._batcher is None:
            self._batcher = Batcher(self.pool, lanes=max(self._max_size // 4, 1))
        return self._batcher

    @property
    def lease_batcher(self) -> Batcher:
        """Lease statements of many callers, sent together apart from durable writes."""
        if self._lease_batcher is None:
            self._lease_batcher = Batcher(self.pool, lanes=max(self._max_size // 4, 1))
        return self._lease_batcher

    async def open(self) -> None:
        """Create the pool, the schema and its tables (migrations); idempotent.

        Concurrent callers wait for one opening instead of each creating a pool.
        """
        if self._pool is not None:
            return
        async with self._opening:
            if self._pool is None:
                await self._open()

    async def _open(self) -> None:
        try:
            from psycopg import AsyncConnection, sql
            from psycopg_pool import AsyncConnectionPool
        except ImportError as exc:  # pragma: no cover - depends on the installed extras
            raise UserError(
                "The PostgreSQL store needs psycopg 3: pip install 'bastion[postgres]'"
            ) from exc
        search_path = sql.SQL("SET search_path TO {}").format(sql.Identifier(self.schema))

        async def configure(conn: AsyncConnection[tuple[Any, ...]]) -> None:
            await conn.execute(search_path)

        pool: AsyncConnectionPool[AsyncConnection[tuple[Any, ...]]] = AsyncConnectionPool(
            self._dsn,
            min_size=1,
            max_size=self._max_size,
            kwargs={"autocommit": True},
            configure=configure,
            open=False,
        )
        # One direct connection first: an unreachable server, an unknown role or database
        # fails at once with the driver's reason, where the pool would retry in the
        # background until its timeout and report only "pool initialization incomplete".
        try:
            first = await AsyncConnection.connect(_with_timeout(self._dsn), autocommit=True)
        except Exception as exc:
            raise StoreError(
                f"Cannot connect to PostgreSQL store {self.url!r}: {_reason(exc)}"
            ) from exc
        try:
            async with first:
                await first.execute(search_path)
                await migrate(first, self.schema)
            await pool.open(wait=True, timeout=10)
        except Exception as exc:
            await pool.close()
            raise StoreError(f"Cannot open PostgreSQL store {self.url!r}: {_reason(exc)}") from exc
        self._pool = pool

    async def close(self) -> None:
        """Close the pool; idempotent."""
        pool, self._pool = self._pool, None
        batchers = (self._batcher, self._lease_batcher)
        self._batcher = self._lease_batcher = None
        for batcher in batchers:
            if batcher is not None:
                await batcher.close()
        self._opening = asyncio.Lock()  # bound to this loop once contended; a reopen may not be
        if pool is not None:
            await pool.close()


CONNECT_TIMEOUT = 10
"""Seconds the first connection may take when the URL sets no ``connect_timeout``."""


def _with_timeout(dsn: str) -> str:
    from psycopg.conninfo import conninfo_to_dict, make_conninfo

    if "connect_timeout" in conninfo_to_dict(dsn):
        return dsn
    return make_conninfo(dsn, connect_timeout=CONNECT_TIMEOUT)


def _reason(exc: BaseException) -> str:
    """The driver's own words, without libpq's repeated multi-line framing."""
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    return "; ".join(dict.fromkeys(lines)) or type(exc).__name__
