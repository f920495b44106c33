"""Fixtures of the server tests: fresh SQLite and PostgreSQL stores, clients of an app."""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from bastion.core import new_id
from tests.durability._backends import DSN


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    """The URL of a fresh, empty SQLite file or PostgreSQL schema."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bastion.db'}"
        return
    import psycopg
    from psycopg import sql

    schema = new_id("bastion_test")
    yield f"{DSN}{'&' if '?' in DSN else '?'}schema={schema}"
    async with await psycopg.AsyncConnection.connect(DSN, autocommit=True) as conn:
        await conn.execute(
            sql.SQL("DROP SCHEMA IF EXISTS {} CASCADE").format(sql.Identifier(schema))
        )


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """The URL of a fresh SQLite file."""
    return f"sqlite:///{tmp_path / 'bastion.db'}"


@asynccontextmanager
async def running(app: FastAPI) -> AsyncGenerator[None]:
    """The app started (its store opened) and, at the end, shut down (drained)."""
    async with app.router.lifespan_context(app):
        yield


def client(app: FastAPI, token: str | None = None) -> httpx.AsyncClient:
    """An in-process client of ``app`` (bearer ``token`` when given)."""
    headers = {"Authorization": f"Bearer {token}"} if token else {}
    transport = httpx.ASGITransport(app=app)
    return httpx.AsyncClient(transport=transport, base_url="http://bastion", headers=headers)
