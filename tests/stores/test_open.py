"""``open_store``: URL schemes, the ``BASTION_STORE`` default, and clear errors for bad URLs."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion.core import UserError
from bastion.stores import DEFAULT_STORE_URL, NewEntry, open_store
from bastion.stores._memory import MemoryStores
from bastion.stores._postgres import PostgresStores
from bastion.stores._redis import RedisStores
from bastion.stores._sqlite import SqliteStores


def test_schemes_pick_their_backend() -> None:
    assert isinstance(open_store("memory://"), MemoryStores)
    sqlite = open_store("sqlite:////tmp/x/b.db")
    assert isinstance(sqlite, SqliteStores)
    assert sqlite.path == "/tmp/x/b.db"
    relative = open_store("sqlite:///data/b.db")
    assert isinstance(relative, SqliteStores)
    assert relative.path == "data/b.db"
    pg = open_store("postgres://u@h/db?schema=tenant_1")
    assert isinstance(pg, PostgresStores)
    assert pg.schema == "tenant_1"
    assert isinstance(open_store("postgresql://u@h/db"), PostgresStores)
    redis = open_store("redis://h:6379/1?prefix=app:")
    assert isinstance(redis, RedisStores)
    assert redis.prefix == "app:"


async def test_default_is_a_sqlite_file_under_the_working_directory(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("BASTION_STORE", raising=False)
    monkeypatch.chdir(tmp_path)
    assert DEFAULT_STORE_URL == "sqlite:///.bastion/bastion.db"
    async with open_store() as stores:
        await stores.journal.append("r", [NewEntry(kind="run_started")], expected_seq=0)
    assert (tmp_path / ".bastion" / "bastion.db").is_file()


def test_env_var_names_the_store(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BASTION_STORE", "memory://")
    assert isinstance(open_store(), MemoryStores)


@pytest.mark.parametrize(
    ("url", "message"),
    [
        ("mysql://h/db", "Unsupported store URL 'mysql://h/db'; use 'memory://', 'sqlite:///path'"),
        ("sqlite://", "SQLite store URL 'sqlite://' has no file path"),
        ("sqlite:///", "SQLite store URL 'sqlite:///' has no file path"),
        ("postgresql://h/db?schema=a;drop", "PostgreSQL schema name 'a;drop' is not a plain"),
        (
            "postgresql://h/db?max_connections=0",
            "max_connections in store URL 'postgresql://h/db?max_connections=0' must be a "
            "whole number of at least 1, got '0'.",
        ),
        ("redis://h?max_connections=many", "max_connections in store URL 'redis://h?max_co"),
    ],
)
def test_bad_urls_are_user_errors(url: str, message: str) -> None:
    with pytest.raises(UserError) as info:
        open_store(url)
    assert str(info.value).startswith(message)


async def test_unreachable_server_fails_with_the_url(unused_tcp_port: int) -> None:
    from bastion.stores import StoreError

    stores = open_store(f"redis://127.0.0.1:{unused_tcp_port}/0")
    with pytest.raises(
        StoreError, match=f"Cannot open Redis store 'redis://127.0.0.1:{unused_tcp_port}/0'"
    ):
        await stores.open()
