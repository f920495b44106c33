"""``isolated_store``: a fresh store of one backend for a test, removed afterwards.

PostgreSQL and Redis are the servers named by ``BASTION_TEST_POSTGRES_DSN`` and
``BASTION_TEST_REDIS_URL`` (defaults: the local ones); each store gets its own schema or key
prefix, so tests running at the same time never see each other's data. A missing server
fails the test when the store is opened.
"""

from __future__ import annotations

import os
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

from bastion.core import UserError, new_id

__all__ = ["BACKENDS", "isolated_store"]

BACKENDS = ("memory", "sqlite", "postgres", "redis")
"""The backends :func:`isolated_store` knows."""


@asynccontextmanager
async def isolated_store(backend: str, directory: Path) -> AsyncGenerator[str]:
    """Yield the URL of an empty store of ``backend``; drop its schema or keys on exit.

    Args:
        backend: ``memory``, ``sqlite`` (a file in ``directory``), ``postgres`` or ``redis``.
        directory: Where a SQLite file goes (``tmp_path`` in pytest).

    Raises:
        UserError: An unknown backend.
    """
    if backend == "memory":
        yield "memory://"
    elif backend == "sqlite":
        yield f"sqlite:///{directory / (new_id('store') + '.db')}"
    elif backend == "postgres":
        async with _postgres() as url:
            yield url
    elif backend == "redis":
        async with _redis() as url:
            yield url
    else:
        raise UserError(f"Unknown backend {backend!r}; use one of {', '.join(BACKENDS)}.")


def _join(url: str, option: str) -> str:
    return f"{url}{'&' if '?' in url else '?'}{option}"


@asynccontextmanager
async def _postgres() -> AsyncGenerator[str]:
    import psycopg
    from psycopg import sql

    dsn = os.environ.get("BASTION_TEST_POSTGRES_DSN", "postgresql://postgres@127.0.0.1:5432/test")
    schema = new_id("bastion_test")
    try:
        yield _join(dsn, f"schema={schema}")
    finally:
        async with await psycopg.AsyncConnection.connect(dsn, autocommit=True) as conn:
            drop = sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
            await conn.execute(drop)


@asynccontextmanager
async def _redis() -> AsyncGenerator[str]:
    from redis.asyncio import Redis

    url = os.environ.get("BASTION_TEST_REDIS_URL", "redis://127.0.0.1:6379/0")
    prefix = new_id("bastion_test") + ":"
    try:
        yield _join(url, f"prefix={prefix}")
    finally:
        client: Any = Redis.from_url(url)  # pyright: ignore[reportUnknownMemberType]
        try:
            keys = [key async for key in client.scan_iter(match=f"{prefix}*", count=1000)]
            if keys:
                await client.delete(*keys)
        finally:
            await client.aclose()
