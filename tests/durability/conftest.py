"""The ``store_url`` fixture of the ownership tests: an isolated store of each backend."""

from __future__ import annotations

import os
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import new_id

DSN = os.environ.get("BASTION_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
REDIS = os.environ.get("BASTION_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")


@pytest.fixture(params=["sqlite", "postgres", "redis"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """An isolated store of each backend shared by the test and its workers."""
    backend: str = request.param
    if backend == "sqlite":
        yield f"sqlite:///{tmp_path / 'store.db'}"
    elif backend == "postgres":
        import psycopg
        from psycopg import sql

        schema = new_id("bastion_test")
        yield f"{DSN}{'&' if '?' in DSN else '?'}schema={schema}"
        async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
            await conn.execute(
                sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            )
    else:
        from redis.asyncio import Redis

        prefix = new_id("bastion_test") + ":"
        yield f"{REDIS}{'&' if '?' in REDIS else '?'}prefix={prefix}"
        client: Any = Redis.from_url(REDIS)  # pyright: ignore[reportUnknownMemberType]
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()
