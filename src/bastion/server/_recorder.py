"""Recording events that synchronous callbacks hand over, to the store, then to followers.

Session listeners and an event bus give events one by one; each goes to the store, in
batches, then to the live followers.

The callbacks never wait for the store: they queue the event, and one writer task per
recorder takes every queued event into its next batch (group commit), as the pump of a
served run does.
"""

from __future__ import annotations

import asyncio
import logging

from bastion.core import Clock

from ._events import EventLog, Hub, LoggedEvent

__all__ = ["Recorder"]

_ATTEMPTS = 5
_RETRY_DELAY = 0.5
_log = logging.getLogger("bastion.server")


class Recorder:
    """The events of one key (a run id, ``session:<id>``), written then published in order."""

    def __init__(
        self, key: str, log: EventLog, hub: Hub, clock: Clock, *, close_hub: bool = True
    ) -> None:
        self.key = key
        self._log = log
        self._hub = hub
        self._clock = clock
        self._close_hub = close_hub
        self._queue: asyncio.Queue[LoggedEvent | None] = asyncio.Queue()
        self._task: asyncio.Task[None] | None = None
        hub.open(key)

    def add(self, event: LoggedEvent) -> None:
        """Queue ``event`` for the store and its followers (call from the event loop)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._write())
            self._task.add_done_callback(self._report)
        self._queue.put_nowait(event)

    def close(self) -> None:
        """No more events: the writer ends once the queued ones are written."""
        if self._task is None:
            self._finish()
            return
        self._queue.put_nowait(None)

    async def flushed(self) -> None:
        """Wait until every event added before ``close()`` is written and published."""
        if self._task is not None:
            await asyncio.shield(self._task)

    def _report(self, task: asyncio.Task[None]) -> None:
        if not task.cancelled() and task.exception() is not None:
            _log.error("%s: events lost", self.key, exc_info=task.exception())

    def _finish(self) -> None:
        if self._close_hub:
            self._hub.close(self.key)

    async def _write(self) -> None:
        ended = False
        try:
            while not ended:
                batch: list[LoggedEvent] = []
                item = await self._queue.get()
                while item is not None:
                    batch.append(item)
                    if self._queue.empty():
                        break
                    item = self._queue.get_nowait()
                ended = item is None
                if batch:
                    await self._append(batch)
                    self._hub.publish(self.key, batch)
        finally:
            self._finish()

    async def _append(self, batch: list[LoggedEvent]) -> None:
        for attempt in range(1, _ATTEMPTS + 1):
            try:
                await self._log.append(self.key, batch)
                return
            except Exception as exc:  # any driver's failure: tried again, then raised
                if attempt == _ATTEMPTS:
                    raise
                _log.warning("%s: writing events failed (%r), attempt %d", self.key, exc, attempt)
                await self._clock.sleep(_RETRY_DELAY * attempt)
