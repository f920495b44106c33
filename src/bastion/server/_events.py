"""The event log of served runs, kept in the store, and the live fan-out of one process.

Every event a served run emits is written to the store before any client sees it, in
batches (one artifact per batch, under the artifact run id ``events:<run_id>``), so a client
that reconnects, here or to another server process on the same store, reads what it missed
from the store. Inside one process, :class:`Hub` hands each written batch to the clients
following the run, so live events need no polling.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime

from bastion.core import AgentEvent, dump_event
from bastion.stores import ArtifactStore

from ._wire import JsonValue, loads_list, number

__all__ = ["EventLog", "Hub", "LoggedEvent"]

_ROLE = "events"


def _key(run_id: str) -> str:
    return f"events:{run_id}"


@dataclass(frozen=True, kw_only=True, slots=True)
class LoggedEvent:
    """One event as clients receive it: its ``seq``, its type, and its JSON text."""

    seq: int
    type: str
    data: str

    @classmethod
    def of(cls, event: AgentEvent) -> LoggedEvent:
        """The logged form of a live event."""
        return cls(seq=event.seq, type=event.type, data=dump_event(event).decode())


class EventLog:
    """Batches of a run's events in the artifact store, read back by sequence number."""

    def __init__(self, artifacts: ArtifactStore, *, writers: int = 4) -> None:
        self._artifacts = artifacts
        # Writes wait here rather than for a pooled connection, which times out: many runs
        # then write fewer, larger batches.
        self._writers = asyncio.Semaphore(writers)

    async def append(self, run_id: str, batch: Sequence[LoggedEvent]) -> None:
        """Write one batch atomically (its artifact's seq is the batch's last event seq)."""
        content = "[" + ",".join(e.data for e in batch) + "]"
        async with self._writers:
            await self._artifacts.write(_key(run_id), content, role=_ROLE, seq=batch[-1].seq)

    async def read(self, run_id: str, after: int) -> list[LoggedEvent]:
        """The run's events with ``seq > after``, in order, each seq once."""
        found: list[LoggedEvent] = []
        last = after
        for artifact in await self._artifacts.read(
            run_id=_key(run_id), role=_ROLE, since_seq=after
        ):
            for event in _events(artifact.content):
                if event.seq > last:  # a seq logged twice (a run resumed after a crash): first
                    found.append(event)
                    last = event.seq
        return found

    async def read_timed(self, run_id: str) -> list[tuple[datetime, LoggedEvent]]:
        """Every event of the run, each once, with the time its batch was written."""
        found: list[tuple[datetime, LoggedEvent]] = []
        last = 0
        for artifact in await self._artifacts.read(run_id=_key(run_id), role=_ROLE):
            for event in _events(artifact.content):
                if event.seq > last:
                    found.append((artifact.created_at, event))
                    last = event.seq
        return found

    async def tail(self, run_id: str) -> LoggedEvent | None:
        """The last event logged for the run, ``None`` when none was."""
        newest = await self._artifacts.read(run_id=_key(run_id), role=_ROLE, max_artifacts=1)
        events = _events(newest[-1].content) if newest else []
        return events[-1] if events else None


def _events(content: str) -> list[LoggedEvent]:
    return [_logged(item) for item in loads_list(content, "A logged batch")]


def _logged(item: JsonValue) -> LoggedEvent:
    if not isinstance(item, dict):
        raise ValueError(f"A logged event is a JSON {type(item).__name__}, not an object.")
    return LoggedEvent(seq=int(number(item["seq"])), type=str(item["type"]), data=json.dumps(item))


Batch = list[LoggedEvent] | None
"""What a follower receives: a written batch, or ``None`` when the run's segment ended here."""


@dataclass(kw_only=True, slots=True)
class Hub:
    """The followers of the runs live in this process, by run id."""

    _live: set[str] = field(default_factory=set[str])
    _followers: dict[str, set[asyncio.Queue[Batch]]] = field(
        default_factory=dict[str, set[asyncio.Queue[Batch]]]
    )

    def open(self, run_id: str) -> None:
        """A segment of the run starts in this process."""
        self._live.add(run_id)

    def follow(self, run_id: str) -> asyncio.Queue[Batch] | None:
        """A queue of the run's batches from now on; ``None`` when it is not live here."""
        if run_id not in self._live:
            return None
        queue: asyncio.Queue[Batch] = asyncio.Queue()
        self._followers.setdefault(run_id, set()).add(queue)
        return queue

    def leave(self, run_id: str, queue: asyncio.Queue[Batch] | None) -> None:
        """Stop handing batches to ``queue``."""
        followers = self._followers.get(run_id)
        if queue is not None and followers is not None:
            followers.discard(queue)
            if not followers:
                del self._followers[run_id]

    def publish(self, run_id: str, batch: list[LoggedEvent]) -> None:
        """Hand a written batch to every follower of the run."""
        for queue in self._followers.get(run_id, ()):
            queue.put_nowait(batch)

    def close(self, run_id: str) -> None:
        """The run's segment ended here: its followers go back to the store."""
        self._live.discard(run_id)
        for queue in self._followers.get(run_id, ()):
            queue.put_nowait(None)

    def close_all(self) -> None:
        """Every segment ended (the server stops)."""
        for run_id in tuple(self._live):
            self.close(run_id)
