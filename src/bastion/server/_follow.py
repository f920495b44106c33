"""Following a run's events from a sequence number: the store first, then live or polled."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from typing import cast

from fastapi.responses import StreamingResponse

from bastion.stores import JournalStore

from ._events import EventLog, Hub, LoggedEvent

__all__ = ["follow_batches", "sse", "sse_response"]

_FINAL = frozenset({"completed", "failed", "aborted", "stopped"})


async def follow_batches(
    run_id: str,
    after: int,
    *,
    log: EventLog,
    hub: Hub,
    journal: JournalStore,
    poll: float,
    stopping: asyncio.Event,
) -> AsyncIterator[list[LoggedEvent]]:
    """Yield the run's events with ``seq > after``, each once, in order, until it settles.

    Missed events come from the store; while the run is live in this process the rest come
    as they are written; while it runs in another process the store is polled every
    ``poll`` seconds. The stream ends once the run is not running and its last logged
    event (an ``agent.end``) was yielded, or when the server stops. Events come in the
    batches they were written in (never empty), so a client's socket gets one write per
    batch rather than one per event.
    """
    last = after
    while True:
        queue = hub.follow(run_id)  # before reading the store: nothing falls in between
        try:
            if missed := await log.read(run_id, last):
                yield missed
                last = missed[-1].seq
            while queue is not None and (batch := await queue.get()) is not None:
                fresh = [event for event in batch if event.seq > last]
                if fresh:
                    yield fresh
                    last = fresh[-1].seq
        finally:
            hub.leave(run_id, queue)
        if queue is None and (stopping.is_set() or await _settled(run_id, last, log, journal)):
            return
        if queue is None:
            await _pause(poll, stopping)


async def _settled(run_id: str, last: int, log: EventLog, journal: JournalStore) -> bool:
    """Whether the run's logged events are all out and no segment of it is going on.

    A run whose record says ``running`` is going on (here, elsewhere, or waiting to be
    taken over) unless its last logged event is an ``agent.end`` with a final status: the
    record then lags (its last write failed), and waiting for it would never end.
    """
    tail = await log.tail(run_id)
    if tail is not None and tail.seq > last:
        return False
    ended = tail is not None and tail.type == "agent.end"
    record = await journal.get_run(run_id)
    if record is not None and record.status == "running":
        return ended and tail is not None and _final(tail)
    return tail is None or ended


def _final(event: LoggedEvent) -> bool:
    status = cast("dict[str, object]", json.loads(event.data)).get("status")
    return status in _FINAL


async def _pause(seconds: float, stopping: asyncio.Event) -> None:
    with contextlib.suppress(TimeoutError):
        await asyncio.wait_for(stopping.wait(), timeout=seconds)


def sse_response(batches: AsyncIterator[list[LoggedEvent]]) -> StreamingResponse:
    """The SSE response of a run's event batches: one body chunk (socket write) per batch."""

    async def body() -> AsyncIterator[bytes]:
        async for batch in batches:
            yield b"".join(map(sse, batch))

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


def sse(event: LoggedEvent) -> bytes:
    """One Server-Sent Event: its id is the event's seq (``Last-Event-ID`` on reconnect)."""
    return f"id: {event.seq}\nevent: {event.type}\ndata: {event.data}\n\n".encode()
