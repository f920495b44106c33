"""``store_url`` for the edge tests: a fresh SQLite file, PostgreSQL schema or Redis prefix.

Tests that import :func:`store_url` run once per persistent backend, against the real
servers (``BASTION_TEST_POSTGRES_DSN`` / ``BASTION_TEST_REDIS_URL``); a missing server fails
them. Each test gets its own schema or key prefix, removed afterwards, so engineers running
the suite at the same time do not see each other's data.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import new_id
from tests._services import postgres_dsn, redis_url

__all__ = ["DSN", "REDIS", "store_url", "tamper"]

DSN = postgres_dsn()
REDIS = redis_url()


def _with(url: str, key: str, value: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{key}={value}"


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """A store URL of a fresh, empty store on one backend."""
    backend: str = request.param
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'bastion.db'}"
    elif backend == "postgres":
        import psycopg
        from psycopg import sql

        schema = new_id("bastion_test")
        yield _with(DSN, "schema", schema)
        async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
    else:
        from redis.asyncio import Redis

        prefix = new_id("bastion_test") + ":"
        yield _with(REDIS, "prefix", prefix)
        client: Any = Redis.from_url(REDIS)  # pyright: ignore[reportUnknownMemberType]
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()


async def tamper(
    url: str,
    run_id: str,
    seq: int,
    *,
    kind: str | None = None,
    schema_version: int | None = None,
    payload: str | None = None,
) -> None:
    """Overwrite fields of one stored journal entry behind the store's back (as damage would).

    ``payload`` is the raw text stored (it need not be JSON).
    """
    if url.startswith("sqlite:///"):
        import sqlite3

        conn = sqlite3.connect(url.removeprefix("sqlite:///"))
        try:
            for column, value in (("kind", kind), ("schema_version", schema_version)):
                if value is not None:
                    conn.execute(
                        f"UPDATE journal SET {column} = ? WHERE run_id = ? AND seq = ?",
                        (value, run_id, seq),
                    )
            if payload is not None:
                conn.execute(
                    "UPDATE journal SET payload = ? WHERE run_id = ? AND seq = ?",
                    (payload, run_id, seq),
                )
            conn.commit()
        finally:
            conn.close()
    elif url.startswith("postgresql://"):
        await _tamper_postgres(url, run_id, seq, kind, schema_version, payload)
    else:
        await _tamper_redis(url, run_id, seq, kind, schema_version, payload)


async def _tamper_postgres(
    url: str,
    run_id: str,
    seq: int,
    kind: str | None,
    schema_version: int | None,
    payload: str | None,
) -> None:
    import psycopg
    from psycopg import sql

    base, _, query = url.partition("?")
    schema = dict(part.split("=", 1) for part in query.split("&"))["schema"]
    async with await psycopg.AsyncConnection.connect(base, autocommit=True) as conn:
        table = sql.Identifier(schema, "journal")
        for column, value in (
            ("kind", kind),
            ("schema_version", schema_version),
            ("payload", payload),
        ):
            if value is not None:
                await conn.execute(
                    sql.SQL("UPDATE {} SET {} = %s WHERE run_id = %s AND seq = %s").format(
                        table, sql.Identifier(column)
                    ),
                    (value, run_id, seq),
                )


async def _tamper_redis(
    url: str,
    run_id: str,
    seq: int,
    kind: str | None,
    schema_version: int | None,
    payload: str | None,
) -> None:
    import json

    from redis.asyncio import Redis

    base, _, query = url.partition("?")
    prefix = dict(part.split("=", 1) for part in query.split("&"))["prefix"]
    client: Any = Redis.from_url(base)  # pyright: ignore[reportUnknownMemberType]
    try:
        key = f"{prefix}journal:{run_id}"
        raw: bytes = await client.lindex(key, seq - 1)
        header, _, body = raw.partition(b"\n")
        fields = json.loads(header)
        if kind is not None:
            fields[0] = kind
        if schema_version is not None:
            fields[1] = schema_version
        text = body if payload is None else payload.encode()
        await client.lset(key, seq - 1, json.dumps(fields).encode() + b"\n" + text)
    finally:
        await client.aclose()
