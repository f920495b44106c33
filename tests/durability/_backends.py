"""``store_url`` for the edge tests: a fresh SQLite file, PostgreSQL schema or Redis prefix.

Tests that import :func:`store_url` run once per persistent backend, against the real
servers (``BASTION_TEST_POSTGRES_DSN`` / ``BASTION_TEST_REDIS_URL``); a missing server fails
them. Each test gets its own schema or key prefix, removed afterwards, so engineers running
the suite at the same time do not see each other's data.
"""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import new_id

__all__ = ["DSN", "REDIS", "store_url"]

DSN = os.environ.get("BASTION_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("BASTION_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


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
