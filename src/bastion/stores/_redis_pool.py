"""A bounded, first-come-first-served redis-py connection pool for ``RedisStores``.

redis-py's default async pool raises ``MaxConnectionsError`` as soon as more commands are in
flight than it has connections (100 by default: a few hundred concurrent sessions exceed it),
and its ``BlockingConnectionPool`` waits on a condition that lets newcomers take a released
connection before the callers already waiting, so under load some callers wait far longer
than the rest and time out. This pool admits callers through a FIFO semaphore of
``max_connections`` slots, then takes a connection from the default pool, which therefore
never runs out. Imported by ``RedisStores.open`` only (redis is an optional dependency).
"""

from __future__ import annotations

import asyncio
from typing import Any

from redis.asyncio import ConnectionPool
from redis.asyncio.connection import AbstractConnection
from redis.exceptions import ConnectionError as RedisConnectionError

__all__ = ["FairConnectionPool"]


class FairConnectionPool(ConnectionPool):
    """At most ``max_connections`` connections in use; waiting callers served in order.

    Args:
        wait_timeout: Seconds a caller waits for a free connection before redis-py's
            ``ConnectionError``.
        **kwargs: As for ``redis.asyncio.ConnectionPool`` (``from_url`` passes the URL's).
    """

    def __init__(self, *, wait_timeout: float, **kwargs: Any) -> None:
        super().__init__(**kwargs)  # pyright: ignore[reportUnknownMemberType]
        self._slots = asyncio.Semaphore(self.max_connections)
        self._wait_timeout = wait_timeout
        self._holding: set[AbstractConnection] = set()

    async def get_connection(self, *args: Any, **kwargs: Any) -> AbstractConnection:
        """Wait for a slot (in arrival order), then take a connection."""
        try:
            async with asyncio.timeout(self._wait_timeout):
                await self._slots.acquire()
        except TimeoutError as exc:
            raise RedisConnectionError(
                f"No Redis connection free after {self._wait_timeout:g} s "
                f"({self.max_connections} in use)."
            ) from exc
        try:
            # On failure the parent releases the connection itself; it holds no slot yet.
            connection: AbstractConnection = await super().get_connection()
        except BaseException:
            self._slots.release()
            raise
        self._holding.add(connection)
        return connection

    async def release(self, connection: AbstractConnection) -> None:
        """Return the connection and its slot."""
        try:
            await super().release(connection)
        finally:
            if connection in self._holding:
                self._holding.discard(connection)
                self._slots.release()
