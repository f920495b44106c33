"""Group commit for PostgreSQL: statements that wait at the same time share one round trip.

Under load a pooled connection is held far longer than its statement takes: the task that
holds it waits for the event loop between sending and reading. With many runs writing at
once every connection is busy and callers queue for one (and time out). The batcher sends
the single statements that are waiting together, on one connection, in pipeline mode and in
one transaction: one round trip and one commit for all of them, the way the SQLite store
commits a group of writes at once.

Each statement's result is read (by its own reader) before the connection goes back to the
pool. If the batch fails as a whole, each of its statements runs again alone, so one bad
statement fails only its own caller. A caller cancelled while its statement is in flight
does not undo it: the statement completes, as on the other stores.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Generic, LiteralString, TypeVar

if TYPE_CHECKING:
    from psycopg import AsyncConnection, AsyncCursor
    from psycopg_pool import AsyncConnectionPool

__all__ = ["Batcher", "Reader"]

T = TypeVar("T")
Row = tuple[Any, ...]
Reader = Callable[["AsyncCursor[Row]"], Awaitable[T]]
"""Turns a statement's cursor into the caller's value (no further statements)."""

_MAX_BATCH = 256


@dataclass(frozen=True, slots=True)
class _Statement(Generic[T]):
    sql: LiteralString
    params: Any
    read: Reader[T]
    done: asyncio.Future[T]


class Batcher:
    """Runs single statements for many callers, batched while earlier batches are in flight.

    At most ``lanes`` batches are in flight at once (each holds one pooled connection); a
    statement that arrives while all lanes are busy waits for the next batch.
    """

    def __init__(self, pool: AsyncConnectionPool[AsyncConnection[Row]], *, lanes: int) -> None:
        self._pool = pool
        self._free = max(lanes, 1)
        self._waiting: list[_Statement[Any]] = []
        self._tasks: set[asyncio.Task[None]] = set()

    async def run(self, sql: LiteralString, params: Any, read: Reader[T]) -> T:
        """Run one statement (in a batch with others waiting now); its reader's value."""
        done: asyncio.Future[T] = asyncio.get_running_loop().create_future()
        done.add_done_callback(_observe)  # a cancelled caller's failure is not "unretrieved"
        self._waiting.append(_Statement(sql, params, read, done))
        self._start()
        return await asyncio.shield(done)

    async def close(self) -> None:
        """Wait for the batches in flight (before the pool closes)."""
        while self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)

    def _start(self) -> None:
        while self._waiting and self._free > 0:
            batch, self._waiting = self._waiting[:_MAX_BATCH], self._waiting[_MAX_BATCH:]
            self._free -= 1
            task = asyncio.get_running_loop().create_task(self._send(batch))
            self._tasks.add(task)
            task.add_done_callback(self._tasks.discard)

    async def _send(self, batch: list[_Statement[Any]]) -> None:
        try:
            if len(batch) == 1:
                await self._alone(batch[0])
            else:
                await self._together(batch)
        finally:
            self._free += 1
            self._start()

    async def _together(self, batch: list[_Statement[Any]]) -> None:
        try:
            async with self._pool.connection() as conn:
                async with conn.pipeline(), conn.transaction():
                    cursors = [await conn.execute(s.sql, s.params) for s in batch]
                values = [await s.read(cur) for s, cur in zip(batch, cursors, strict=True)]
        except Exception:  # the batch as a whole failed: each statement alone says whose
            for statement in batch:
                await self._alone(statement)
            return
        for statement, value in zip(batch, values, strict=True):
            _settle(statement.done, value)

    async def _alone(self, statement: _Statement[Any]) -> None:
        try:
            async with self._pool.connection() as conn:
                value = await statement.read(await conn.execute(statement.sql, statement.params))
        except Exception as error:  # the caller's own failure, raised to it by its future
            if not statement.done.done():
                statement.done.set_exception(error)
            return
        _settle(statement.done, value)


def _observe(done: asyncio.Future[Any]) -> None:
    if not done.cancelled():
        done.exception()


def _settle(done: asyncio.Future[Any], value: object) -> None:
    if not done.done():
        done.set_result(value)
