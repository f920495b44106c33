"""The PostgreSQL backend against the real server (``BASTION_TEST_POSTGRES_DSN``).

Each test gets its own schema, dropped afterwards. A missing server fails the tests.
ARCHITECTURE §4 (counters shared across processes), §5 (journal).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion.core import new_id
from bastion.stores import SessionConflict, StoreError, open_store
from bastion.testing import ProcessStoreConformance, StoreConformance, isolated_store
from tests._services import postgres_dsn

from ._governed import GovernedProcesses

DSN = postgres_dsn()


@pytest.fixture
async def store_url(tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store("postgres", tmp_path) as url:
        yield url


class TestPostgresStores(StoreConformance, ProcessStoreConformance):
    pass


async def test_url_keeps_the_password_out_of_its_text() -> None:
    stores = open_store("postgresql://bob:hunter2@db.example:5432/app?schema=s1&sslmode=disable")
    assert stores.url == "postgresql://bob:***@db.example:5432/app?schema=s1&sslmode=disable"
    assert "hunter2" not in repr(stores)


class TestPostgresGovernedProcesses(GovernedProcesses):
    pass


async def _connections(application_name: str) -> int:
    import psycopg

    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        cur = await conn.execute(
            "SELECT count(*) FROM pg_stat_activity WHERE application_name = %s",
            (application_name,),
        )
        row = await cur.fetchone()
    assert row is not None
    return int(row[0])


async def test_agents_sharing_an_unopened_store_open_one_pool(store_url: str) -> None:
    """200 concurrent first opens (agents sharing a store start this way) make one pool: at
    most its 10 connections on the server. One pool each was a connection storm past the
    server's max_connections (100): "pool initialization incomplete" after 10 s."""
    name = new_id("bastion_pool")
    stores = open_store(f"{store_url}&application_name={name}")
    await asyncio.gather(*(stores.open() for _ in range(200)))
    try:
        await asyncio.gather(
            *(stores.sessions.append(f"s{i}", kind="m", payload={}) for i in range(200))
        )
        assert 1 <= await _connections(name) <= 10
    finally:
        await stores.close()


async def test_max_connections_in_the_url_sizes_the_pool(store_url: str) -> None:
    name = new_id("bastion_pool")
    async with open_store(f"{store_url}&application_name={name}&max_connections=3") as stores:
        await asyncio.gather(
            *(stores.sessions.append(f"s{i}", kind="m", payload={}) for i in range(100))
        )
        assert 1 <= await _connections(name) <= 3


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://postgres@127.0.0.1:1/test", "port 1 failed: Connection refused"),
        ("postgresql://bastion_no_such_role@127.0.0.1:5432/test", 'role "bastion_no_such_role"'),
        (
            "postgresql://postgres@127.0.0.1:5432/bastion_no_such_db",
            'database "bastion_no_such_db"',
        ),
    ],
)
async def test_an_unreachable_server_fails_once_with_the_drivers_reason(
    url: str, reason: str
) -> None:
    """Refused, unknown role, unknown database: a StoreError naming the cause, no pool left."""
    stores = open_store(url)
    with pytest.raises(StoreError) as info:
        await stores.open()
    message = str(info.value)
    assert message.startswith(f"Cannot connect to PostgreSQL store {url!r}: connection failed:")
    assert reason in message
    assert "pool initialization incomplete" not in message
    with pytest.raises(StoreError, match="is not open"):
        await stores.journal.last_seq("r")  # nothing was left half-open


async def test_a_version_1_schema_gets_leases_and_session_heads(store_url: str) -> None:
    """Sessions stored by the first schema get their head backfilled when the store opens."""
    import psycopg
    from psycopg import sql

    from bastion.stores._postgres_schema import MIGRATIONS

    schema = store_url.rsplit("schema=", 1)[1]
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        await conn.execute(sql.SQL("SET search_path TO {}").format(sql.Identifier(schema)))
        await conn.execute("CREATE TABLE bastion_schema (version integer NOT NULL)")
        for statement in MIGRATIONS[0]:
            await conn.execute(statement)
        await conn.execute("INSERT INTO bastion_schema (version) VALUES (1)")
        await conn.execute("INSERT INTO sessions VALUES ('old', 2, NULL, 1.0, 1.0)")
        await conn.execute(
            "INSERT INTO session_entries VALUES ('old', 'e1', NULL, 'message', '{}', 1, 1.0), "
            "('old', 'e2', 'e1', 'message', '{}', 2, 1.0)"
        )
    async with open_store(store_url) as stores:
        with pytest.raises(SessionConflict) as info:
            await stores.sessions.append(
                "old", kind="message", payload={}, parent_id="e1", expect_head=True
            )
        assert info.value.actual_head == "e2"
        third = await stores.sessions.append(
            "old", kind="message", payload={}, parent_id="e2", expect_head=True
        )
        assert third.position == 3
        lease = await stores.leases.acquire("run:r", "w", ttl=5, now=1.0)
        assert lease.expires_at == 6.0


async def test_statements_waiting_together_share_a_round_trip_and_fail_alone(
    store_url: str,
) -> None:
    """Concurrent single statements go out in batches; a failing one fails only its caller."""
    from psycopg import errors

    from bastion.stores._pg_batch import Batcher
    from bastion.stores._postgres import PostgresStores

    async def one(cur: object) -> object:
        return await cur.fetchone()  # type: ignore[attr-defined]  # an AsyncCursor

    async with open_store(store_url) as stores:
        assert isinstance(stores, PostgresStores)
        batcher = Batcher(stores.pool, lanes=1)
        before = stores.pool.get_stats().get("requests_num", 0)
        answers = await asyncio.gather(
            *(batcher.run("SELECT %s::int", (i,), one) for i in range(50)),
            batcher.run("SELECT 1 / %s", (0,), one),
            return_exceptions=True,
        )
        checkouts = stores.pool.get_stats().get("requests_num", 0) - before
    assert answers[:50] == [(i,) for i in range(50)]
    assert isinstance(answers[50], errors.DivisionByZero)
    # The first statement went alone; the other 50 waited for it and went as one batch,
    # which failed as a whole (one connection) and so ran again one by one (50).
    assert checkouts == 1 + 1 + 50


async def test_concurrent_journal_appends_share_connections(store_url: str) -> None:
    """A hundred runs appending at once take a handful of connections, each write kept."""
    from bastion.stores import NewEntry
    from bastion.stores._postgres import PostgresStores

    async with open_store(store_url) as stores:
        assert isinstance(stores, PostgresStores)
        before = stores.pool.get_stats().get("requests_num", 0)
        await asyncio.gather(
            *(
                stores.journal.append(
                    f"r{i}", [NewEntry(kind="run_started", payload={"i": i})], expected_seq=0
                )
                for i in range(100)
            )
        )
        checkouts = stores.pool.get_stats().get("requests_num", 0) - before
        assert [(await stores.journal.read(f"r{i}"))[0].payload for i in range(100)] == [
            {"i": i} for i in range(100)
        ]
    assert checkouts <= 10
