"""Retention on the real backends: storage grows linearly and pruning removes the rows/keys.

The behaviour (what is pruned) is in ``StoreConformance``; here the storage itself is
counted: table rows for SQLite and PostgreSQL, keys for Redis.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any, cast

import pytest
from psycopg import sql

from bastion.stores import NewEntry, Stores, open_store, prune_runs, prune_sessions
from bastion.stores._postgres import PostgresStores
from bastion.stores._redis import RedisStores
from bastion.testing import isolated_store

TABLES = ("runs", "journal", "sessions", "session_entries")


async def _fill(stores: Stores, first: int, count: int) -> None:
    """``count`` finished runs of three entries and sessions of two entries plus state."""
    for n in range(first, first + count):
        run_id = f"run{n}"
        entries = [NewEntry(kind="model_response", payload={"n": i}) for i in range(3)]
        await stores.journal.append(run_id, entries, expected_seq=0, status="completed")
        for i in range(2):
            await stores.sessions.append(f"s{n}", kind="message", payload={"i": i})
        await stores.sessions.put_state(f"s{n}", {"n": n})


def _sqlite_counter(url: str) -> Callable[[Stores], Awaitable[int]]:
    path = url.removeprefix("sqlite:///")

    async def count(_: Stores) -> int:
        with sqlite3.connect(path) as conn:
            return sum(conn.execute(f"SELECT COUNT(*) FROM {t}").fetchone()[0] for t in TABLES)

    return count


async def _postgres_count(stores: Stores) -> int:
    pg = cast("PostgresStores", stores)
    total = 0
    async with pg.pool.connection() as conn:
        for table in TABLES:
            query = sql.SQL("SELECT COUNT(*) FROM {}.{}").format(
                sql.Identifier(pg.schema), sql.Identifier(table)
            )
            cur = await conn.execute(query)
            row = await cur.fetchone()
            total += int(row[0]) if row else 0
    return total


async def _redis_count(stores: Stores) -> int:
    redis = cast("RedisStores", stores)
    client: Any = redis.client
    keys = [k async for k in client.scan_iter(match=f"{redis.prefix}*", count=500)]
    # Per-run and per-session keys, plus the members of the shared index sorted sets.
    total = 0
    for key in keys:
        total += int(await client.zcard(key)) if await client.type(key) == b"zset" else 1
    return total


@pytest.mark.parametrize("backend", ["sqlite", "postgres", "redis"])
async def test_storage_grows_linearly_and_pruning_removes_it(backend: str, tmp_path: Path) -> None:
    async with isolated_store(backend, tmp_path) as url, open_store(url) as stores:
        count = {
            "sqlite": _sqlite_counter(url),
            "postgres": _postgres_count,
            "redis": _redis_count,
        }[backend]
        empty = await count(stores)
        await _fill(stores, 0, 10)
        ten = await count(stores) - empty
        await _fill(stores, 10, 10)
        twenty = await count(stores) - empty
        assert twenty == 2 * ten > 0
        assert (await prune_runs(stores.journal, keep_last=10)).deleted == 10
        assert (await prune_sessions(stores.sessions, keep_last=10)).deleted == 10
        assert await count(stores) - empty == ten
        await prune_runs(stores.journal, keep_last=0)
        await prune_sessions(stores.sessions, keep_last=0)
        assert await count(stores) == empty
