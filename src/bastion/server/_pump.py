"""Running one segment of a served run: its events go to the store, then to its followers."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from bastion.agent import AgentStream
from bastion.core import AgentEvent, Clock

from ._events import EventLog, Hub, LoggedEvent

__all__ = ["pump"]

_End = None
_ATTEMPTS = 5
_RETRY_DELAY = 0.5
_log = logging.getLogger("bastion.server")


async def pump(
    stream: AgentStream[Any], first: AgentEvent, log: EventLog, hub: Hub, clock: Clock
) -> None:
    """Iterate ``stream`` to its end; write its events in batches, then publish each batch.

    The caller opens the run in ``hub`` before this starts; it is closed here at the end.

    The writer goes on until the stream's last event is written, even when the stream
    raises (its error is raised after that). The run never waits for the store: events
    queue up while a batch is being written, and the next batch takes all of them (group
    commit).
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

    producer = asyncio.create_task(produce())
    try:
        await _write(run_id, queue, log, hub, clock)
    except BaseException:
        producer.cancel()  # the log cannot be written (or the server stops): stop the run
        await asyncio.gather(producer, return_exceptions=True)
        raise
    finally:
        hub.close(run_id)
    await producer  # a stream that raised: its error, once every event it gave is logged


async def _write(
    run_id: str, queue: asyncio.Queue[AgentEvent | None], log: EventLog, hub: Hub, clock: Clock
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
            await _append(run_id, batch, log, clock)
            hub.publish(run_id, batch)


async def _append(run_id: str, batch: list[LoggedEvent], log: EventLog, clock: Clock) -> None:
    """Write a batch; a busy store (no pooled connection in time, say) is tried again.

    Any driver's failure counts (the stores do not map their drivers' errors to one type);
    it is logged with its cause, and the last attempt's failure is raised, not swallowed.
    """
    for attempt in range(1, _ATTEMPTS + 1):
        try:
            await log.append(run_id, batch)
            return
        except Exception as exc:
            if attempt == _ATTEMPTS:
                raise
            _log.warning("run %s: writing events failed (%r), attempt %d", run_id, exc, attempt)
            await clock.sleep(_RETRY_DELAY * attempt)
