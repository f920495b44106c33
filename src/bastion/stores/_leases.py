"""The lease store of each backend (see ``_ownership.py`` for what a lease is).

Every acquire, renew and release is one atomic step on the backend: a dict update in memory,
one ``BEGIN IMMEDIATE`` transaction in SQLite, one conditional upsert in PostgreSQL (the
``ON CONFLICT … DO UPDATE … WHERE`` re-checks the locked row, so two racers cannot both
win) and one Lua script in Redis. Built by each backend's ``Stores``.
"""

from __future__ import annotations

import sqlite3
from typing import TYPE_CHECKING, Any, cast

from ._ownership import Lease, LeaseHeld, LeaseLost, check_lease
from ._sqlite_db import SqliteDatabase, transaction

if TYPE_CHECKING:
    from psycopg import AsyncCursor

    from ._postgres import PostgresStores
    from ._redis import RedisStores

__all__ = [
    "MemoryLeaseStore",
    "PostgresLeaseStore",
    "RedisLeaseStore",
    "SqliteLeaseStore",
]

_Row = tuple[str, float, float, float]  # owner, acquired_at, renewed_at, expires_at


def _lease(key: str, row: _Row | list[Any] | tuple[Any, ...]) -> Lease:
    owner, acquired, renewed, expires = row
    return Lease(
        key=key,
        owner=owner.decode() if isinstance(owner, bytes) else str(owner),
        acquired_at=float(acquired),
        renewed_at=float(renewed),
        expires_at=float(expires),
    )


class MemoryLeaseStore:
    """Leases in a dict (one process)."""

    def __init__(self) -> None:
        self._leases: dict[str, Lease] = {}

    async def acquire(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Take the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        held = self._leases.get(key)
        if held is not None and held.owner != owner and held.live(now):
            raise LeaseHeld(held, now)
        acquired = held.acquired_at if held is not None and held.owner == owner else now
        lease = Lease(
            key=key, owner=owner, acquired_at=acquired, renewed_at=now, expires_at=now + ttl
        )
        self._leases[key] = lease
        return lease

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Extend the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        held = self._leases.get(key)
        if held is None or held.owner != owner:
            raise LeaseLost(key, owner, held)
        lease = Lease(
            key=key, owner=owner, acquired_at=held.acquired_at, renewed_at=now, expires_at=now + ttl
        )
        self._leases[key] = lease
        return lease

    async def release(self, key: str, owner: str) -> bool:
        """Drop the lease; see :class:`LeaseStore`."""
        held = self._leases.get(key)
        if held is None or held.owner != owner:
            return False
        del self._leases[key]
        return True

    async def get(self, key: str) -> Lease | None:
        """Return the lease on ``key``."""
        return self._leases.get(key)


_SQLITE_SELECT = "SELECT owner, acquired_at, renewed_at, expires_at FROM leases WHERE key = ?"


def _sqlite_acquire(
    conn: sqlite3.Connection, key: str, owner: str, ttl: float, now: float
) -> tuple[bool, _Row]:
    with transaction(conn):
        row = cast("_Row | None", conn.execute(_SQLITE_SELECT, (key,)).fetchone())
        if row is not None and row[0] != owner and now < row[3]:
            return False, row
        acquired = row[1] if row is not None and row[0] == owner else now
        conn.execute(
            "INSERT INTO leases (key, owner, acquired_at, renewed_at, expires_at) "
            "VALUES (?, ?, ?, ?, ?) ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, "
            "acquired_at = excluded.acquired_at, renewed_at = excluded.renewed_at, "
            "expires_at = excluded.expires_at",
            (key, owner, acquired, now, now + ttl),
        )
    return True, (owner, acquired, now, now + ttl)


def _sqlite_renew(
    conn: sqlite3.Connection, key: str, owner: str, ttl: float, now: float
) -> tuple[bool, _Row | None]:
    with transaction(conn):
        done = conn.execute(
            "UPDATE leases SET renewed_at = ?, expires_at = ? WHERE key = ? AND owner = ? "
            "RETURNING acquired_at",
            (now, now + ttl, key, owner),
        ).fetchone()
        if done is None:
            return False, cast("_Row | None", conn.execute(_SQLITE_SELECT, (key,)).fetchone())
    return True, (owner, float(done[0]), now, now + ttl)


def _sqlite_release(conn: sqlite3.Connection, key: str, owner: str) -> bool:
    with transaction(conn):
        cur = conn.execute("DELETE FROM leases WHERE key = ? AND owner = ?", (key, owner))
        return cur.rowcount > 0


def _sqlite_get(conn: sqlite3.Connection, key: str) -> _Row | None:
    return cast("_Row | None", conn.execute(_SQLITE_SELECT, (key,)).fetchone())


class SqliteLeaseStore:
    """Leases in the ``leases`` table."""

    def __init__(self, db: SqliteDatabase) -> None:
        self._db = db

    async def acquire(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Take the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        won, row = await self._db.run(_sqlite_acquire, key, owner, ttl, now)
        if not won:
            raise LeaseHeld(_lease(key, row), now)
        return _lease(key, row)

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Extend the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        won, row = await self._db.run(_sqlite_renew, key, owner, ttl, now)
        if not won or row is None:
            raise LeaseLost(key, owner, _lease(key, row) if row is not None else None)
        return _lease(key, row)

    async def release(self, key: str, owner: str) -> bool:
        """Drop the lease; see :class:`LeaseStore`."""
        return await self._db.run(_sqlite_release, key, owner)

    async def get(self, key: str) -> Lease | None:
        """Return the lease on ``key``."""
        row = await self._db.run(_sqlite_get, key)
        return _lease(key, row) if row is not None else None


# The WHERE of ON CONFLICT … DO UPDATE is evaluated on the conflicting row after it is
# locked (its newest committed version), so of two racing acquirers exactly one updates.
# Lease writes commit without waiting for the WAL flush (``synchronous_commit`` off for
# their own transaction, set inside the one statement): a lease is soft state. A server
# crash can lose the last lease writes but never corrupts anything; the journal's
# ``expected_seq`` and the sessions' head still refuse a second writer. It saves each turn
# and run two disk flushes on the server.
_PG_QUICK = "set_config('synchronous_commit', 'off', true)"
_PG_ACQUIRE = (
    "INSERT INTO leases AS l (key, owner, acquired_at, renewed_at, expires_at) "
    "SELECT %(key)s, %(owner)s, %(now)s, %(now)s, %(expires)s FROM (SELECT "
    + _PG_QUICK
    + ") AS quick ON CONFLICT (key) DO UPDATE "
    "SET owner = EXCLUDED.owner, renewed_at = EXCLUDED.renewed_at, "
    "expires_at = EXCLUDED.expires_at, acquired_at = CASE WHEN l.owner = EXCLUDED.owner "
    "THEN l.acquired_at ELSE EXCLUDED.acquired_at END "
    "WHERE l.owner = EXCLUDED.owner OR l.expires_at <= %(now)s RETURNING l.acquired_at"
)
_PG_SELECT = "SELECT owner, acquired_at, renewed_at, expires_at FROM leases WHERE key = %s"
_PG_RENEW = (
    "UPDATE leases SET renewed_at = %s, expires_at = %s "
    f"WHERE key = %s AND owner = %s AND {_PG_QUICK} IS NOT NULL RETURNING acquired_at"
)
_PG_RELEASE = f"DELETE FROM leases WHERE key = %s AND owner = %s AND {_PG_QUICK} IS NOT NULL"


class PostgresLeaseStore:
    """Leases in the ``leases`` table.

    Lease statements commit without waiting for the disk (a lost lease write only lets a
    lease lapse early), so they go through their own batcher: a batch of them never
    carries a journal write.
    """

    def __init__(self, owner: PostgresStores) -> None:
        self._owner = owner

    async def acquire(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Take the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        params = {"key": key, "owner": owner, "now": now, "expires": now + ttl}
        batcher = self._owner.lease_batcher
        while True:
            row = await batcher.run(_PG_ACQUIRE, params, _one)
            if row is not None:
                return Lease(
                    key=key,
                    owner=owner,
                    acquired_at=float(row[0]),
                    renewed_at=now,
                    expires_at=now + ttl,
                )
            held = await batcher.run(_PG_SELECT, (key,), _one)
            if held is not None:  # else released in between: try again
                raise LeaseHeld(_lease(key, held), now)

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Extend the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        batcher = self._owner.lease_batcher
        row = await batcher.run(_PG_RENEW, (now, now + ttl, key, owner), _one)
        if row is None:
            held = await batcher.run(_PG_SELECT, (key,), _one)
            raise LeaseLost(key, owner, _lease(key, held) if held is not None else None)
        return Lease(
            key=key, owner=owner, acquired_at=float(row[0]), renewed_at=now, expires_at=now + ttl
        )

    async def release(self, key: str, owner: str) -> bool:
        """Drop the lease; see :class:`LeaseStore`."""
        return await self._owner.lease_batcher.run(_PG_RELEASE, (key, owner), _rowcount) > 0

    async def get(self, key: str) -> Lease | None:
        """Return the lease on ``key``."""
        row = await self._owner.lease_batcher.run(_PG_SELECT, (key,), _one)
        return _lease(key, row) if row is not None else None


async def _one(cur: AsyncCursor[tuple[Any, ...]]) -> tuple[Any, ...] | None:
    return await cur.fetchone()


async def _rowcount(cur: AsyncCursor[tuple[Any, ...]]) -> int:
    return cur.rowcount


# KEYS: lease hash.  ARGV: owner, now, ttl.  Returns {1, acquired_at} or {0, the holder's row}.
_REDIS_ACQUIRE = """
local held = redis.call('HMGET', KEYS[1], 'owner', 'acquired_at', 'renewed_at', 'expires_at')
local now = tonumber(ARGV[2])
if held[1] and held[1] ~= ARGV[1] and tonumber(held[4]) > now then return {0, held} end
local acquired = ARGV[2]
if held[1] == ARGV[1] then acquired = held[2] end
redis.call('HSET', KEYS[1], 'owner', ARGV[1], 'acquired_at', acquired, 'renewed_at', ARGV[2],
  'expires_at', string.format('%.17g', now + tonumber(ARGV[3])))
return {1, acquired}
"""
# KEYS: lease hash.  ARGV: owner, now, ttl.  Returns {1, acquired_at} or {0, the holder's row}.
_REDIS_RENEW = """
local held = redis.call('HMGET', KEYS[1], 'owner', 'acquired_at', 'renewed_at', 'expires_at')
if held[1] ~= ARGV[1] then return {0, held} end
redis.call('HSET', KEYS[1], 'renewed_at', ARGV[2],
  'expires_at', string.format('%.17g', tonumber(ARGV[2]) + tonumber(ARGV[3])))
return {1, held[2]}
"""
# KEYS: lease hash.  ARGV: owner.
_REDIS_RELEASE = """
if redis.call('HGET', KEYS[1], 'owner') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
return 1
"""


class RedisLeaseStore:
    """Leases: one hash per key (``<prefix>lease:<key>``)."""

    def __init__(self, owner: RedisStores) -> None:
        self._owner = owner

    def _key(self, key: str) -> str:
        return f"{self._owner.prefix}lease:{key}"

    async def _eval(self, script: str, key: str, args: list[str]) -> list[Any]:
        return cast("list[Any]", await self._owner.script(script)(keys=[self._key(key)], args=args))

    async def acquire(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Take the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        won, value = await self._eval(_REDIS_ACQUIRE, key, [owner, repr(now), repr(ttl)])
        if not won:
            raise LeaseHeld(_lease(key, value), now)
        return Lease(
            key=key, owner=owner, acquired_at=float(value), renewed_at=now, expires_at=now + ttl
        )

    async def renew(self, key: str, owner: str, *, ttl: float, now: float) -> Lease:
        """Extend the lease; see :class:`LeaseStore`."""
        check_lease(key, owner, ttl)
        won, value = await self._eval(_REDIS_RENEW, key, [owner, repr(now), repr(ttl)])
        if not won:
            holder = _lease(key, value) if value and value[0] is not None else None
            raise LeaseLost(key, owner, holder)
        return Lease(
            key=key, owner=owner, acquired_at=float(value), renewed_at=now, expires_at=now + ttl
        )

    async def release(self, key: str, owner: str) -> bool:
        """Drop the lease; see :class:`LeaseStore`."""
        return bool(await self._eval(_REDIS_RELEASE, key, [owner]))

    async def get(self, key: str) -> Lease | None:
        """Return the lease on ``key``."""
        row = cast(
            "list[bytes | None]",
            await self._owner.client.hmget(
                self._key(key), ["owner", "acquired_at", "renewed_at", "expires_at"]
            ),
        )
        return _lease(key, row) if row[0] is not None else None
