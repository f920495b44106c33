"""Running one segment of a served run: its events go to the store, then to its followers."""

from __future__ import annotations

import asyncio
from typing import Any

from bastion.agent import AgentStream
from bastion.core import AgentEvent

from ._events import EventLog, Hub, LoggedEvent

__all__ = ["pump"]

_End = None


async def pump(stream: AgentStream[Any], first: AgentEvent, log: EventLog, hub: Hub) -> None:
    """Iterate ``stream`` to its end; write its events in batches, then publish each batch.

    The caller opens the run in ``hub`` before this starts; it is closed here at the end.

    The run never waits for the store: events queue up while a batch is being written, and
    the next batch takes all of them (group commit).
    """
    run_id = stream.run_id
    queue: asyncio.Queue[AgentEvent | None] = asyncio.Queue()
    queue.put_nowait(first)

    async def produce() -> None:
        try:
            async for event in stream:
                queue.put_nowait(event)
        finally:
            queue.put_nowait(_End)

    try:
        async with asyncio.TaskGroup() as group:
            group.create_task(produce())
            await _write(run_id, queue, log, hub)
    finally:
        hub.close(run_id)


async def _write(
    run_id: str, queue: asyncio.Queue[AgentEvent | None], log: EventLog, hub: Hub
) -> None:
    ended = False
    while not ended:
        batch: list[LoggedEvent] = []
        item = await queue.get()
        while True:
            if item is None:
                ended = True
                break
            batch.append(LoggedEvent.of(item))
            if queue.empty():
                break
            item = queue.get_nowait()
        if batch:
            await log.append(run_id, batch)
            hub.publish(run_id, batch)
