"""The Redis backend against the real server (``BASTION_TEST_REDIS_URL``).

Each test uses its own key prefix, deleted afterwards. A missing server fails the tests.
ARCHITECTURE §4 (counters shared across processes), §5 (journal).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import new_id
from bastion.stores import SessionConflict, Stores, open_store
from bastion.stores._redis import POOL_SIZE
from bastion.testing import ProcessStoreConformance, StoreConformance, isolated_store
from tests._services import redis_url

from ._governed import GovernedProcesses

URL = redis_url()


@pytest.fixture
async def store_url(tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store("redis", tmp_path) as url:
        yield url


class TestRedisStores(StoreConformance, ProcessStoreConformance):
    pass


class TestRedisGovernedProcesses(GovernedProcesses):
    pass


async def _clients(name: str) -> int:
    from redis.asyncio import Redis

    client: Any = Redis.from_url(URL)  # pyright: ignore[reportUnknownMemberType]
    try:
        listed: list[dict[str, Any]] = await client.client_list()
    finally:
        await client.aclose()
    return sum(1 for c in listed if c.get("name") == name)


async def _burst(stores: Stores, callers: int) -> None:
    await asyncio.gather(
        *(stores.sessions.append(f"s{i}", kind="m", payload={}) for i in range(callers))
    )


async def test_callers_beyond_the_pool_wait_and_connections_stay_bounded(store_url: str) -> None:
    """400 callers at once on one store: none fails (redis-py's own pool raises
    MaxConnectionsError past 100), and the server sees at most POOL_SIZE connections."""
    name = new_id("bastion_pool")
    stores = open_store(f"{store_url}&client_name={name}")
    await asyncio.gather(*(stores.open() for _ in range(20)))  # one client, not 20
    try:
        await _burst(stores, 400)
        assert 1 <= await _clients(name) <= POOL_SIZE
    finally:
        await stores.close()


async def test_max_connections_in_the_url_sizes_the_pool(store_url: str) -> None:
    name = new_id("bastion_pool")
    async with open_store(f"{store_url}&client_name={name}&max_connections=3") as stores:
        await _burst(stores, 100)
        assert 1 <= await _clients(name) <= 3


async def test_sessions_stored_before_the_head_field_append_conditionally(store_url: str) -> None:
    """A session written without a ``head`` field: its last entry's id is the head."""
    from redis.asyncio import Redis

    async with open_store(store_url) as stores:
        first = await stores.sessions.append("old", kind="message", payload={"n": 1})
        second = await stores.sessions.append(
            "old", kind="message", payload={"n": 2}, parent_id=first.entry_id
        )
        prefix = store_url.rsplit("prefix=", 1)[1]
        client: Any = Redis.from_url(URL)  # pyright: ignore[reportUnknownMemberType]
        try:
            assert await client.hdel(f"{prefix}session:old", "head") == 1  # as stored before
        finally:
            await client.aclose()
        with pytest.raises(SessionConflict) as info:
            await stores.sessions.append(
                "old", kind="message", payload={}, parent_id=first.entry_id, expect_head=True
            )
        assert info.value.actual_head == second.entry_id
        third = await stores.sessions.append(
            "old", kind="message", payload={"n": 3}, parent_id=second.entry_id, expect_head=True
        )
        assert third.position == 3
