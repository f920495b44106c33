"""A workflow's live events: published by an activity into the store, followed by seq.

Workflow code does no I/O: :class:`WorkflowEvents` hands the events the loop yields to the
``publish`` activity in batches (one activity per batch, one batch at a time, in order).
The activity appends them to the event log the HTTP server keeps for its runs (artifacts
``events:<workflow id>`` of role ``events``, each a JSON array of events, its seq the
batch's last) and skips every event whose seq is logged already, so a retried or replayed
publish never logs an event twice. Any process on the store follows the log from a seq.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar, cast

from temporalio import activity, workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError

from bastion.core import AgentEvent, dump_event, load_event

if TYPE_CHECKING:
    from bastion.agent import AgentStream, RunResult
    from bastion.core import JsonObject, JsonValue
    from bastion.stores import ArtifactStore, Stores

__all__ = [
    "SESSION_PATCH",
    "EventChannel",
    "WorkflowEvents",
    "ended",
    "publish_activity",
]

_OutputT = TypeVar("_OutputT")

_ROLE = "events"
_FINAL = frozenset({"completed", "failed", "aborted", "stopped"})
_PATCH = "bastion.events"
"""The patch marker of runs that publish their events."""
SESSION_PATCH = "bastion.session-events"
"""The patch marker of sessions that publish their turns' events."""
_PUBLISH_TIMEOUT = timedelta(seconds=30)
_PUBLISH_RETRY = RetryPolicy(
    initial_interval=timedelta(milliseconds=200),
    maximum_interval=timedelta(seconds=5),
    maximum_attempts=8,
)


def log_key(workflow_id: str) -> str:
    """The artifact run id of a workflow's event log (the server's ``events:<run id>``)."""
    return f"events:{workflow_id}"


@dataclass(kw_only=True, slots=True)
class EventChannel:
    """The store a Temporal agent's events go to, opened once per process on first use.

    ``owned``: the channel opened the store from a URL, and closes it in :meth:`close`.
    """

    stores: Stores
    owned: bool = False
    _opened: asyncio.Lock | None = None
    _open: bool = False

    async def close(self) -> None:
        """Close the store if this channel opened it (it opens again on next use)."""
        if self.owned and self._open:
            self._open = False
            await self.stores.close()

    async def artifacts(self) -> ArtifactStore:
        """The opened store's artifacts."""
        if not self._open:
            self._opened = self._opened or asyncio.Lock()
            async with self._opened:
                if not self._open:
                    await self.stores.open()
                    self._open = True
        return self.stores.artifacts

    async def append(self, workflow_id: str, events: Sequence[Mapping[str, JsonValue]]) -> int:
        """Log the events newer than the log's last; how many that was."""
        artifacts = await self.artifacts()
        last = await _tail_seq(artifacts, workflow_id)
        fresh = [event for event in events if _seq(event) > last]
        if fresh:
            content = json.dumps(fresh, separators=(",", ":"))
            seq = _seq(fresh[-1])
            await artifacts.write(log_key(workflow_id), content, role=_ROLE, seq=seq)
        return len(fresh)

    async def last_seq(self, workflow_id: str) -> int:
        """The seq of the last event logged for the workflow (0 when none was)."""
        return await _tail_seq(await self.artifacts(), workflow_id)

    async def read(self, workflow_id: str, after: int) -> list[AgentEvent]:
        """The logged events with ``seq > after``, in order, each seq once."""
        artifacts = await self.artifacts()
        found: list[AgentEvent] = []
        last = after
        logged = await artifacts.read(run_id=log_key(workflow_id), role=_ROLE, since_seq=after)
        for artifact in logged:
            for item in _items(artifact.content):
                if _seq(item) > last:
                    found.append(load_event(json.dumps(item)))
                    last = found[-1].seq
        return found

    async def follow(
        self,
        workflow_id: str,
        after: int,
        *,
        poll: float,
        closed: Callable[[], Awaitable[bool]],
    ) -> AsyncIterator[list[AgentEvent]]:
        """Batches of the workflow's events after ``after`` until its run ends or parks.

        The log is read every ``poll`` seconds. The stream ends after an ``agent.end``
        that is the last event logged (the run ended, or parked for a decision), or once
        ``closed()`` says the workflow is over and nothing more was logged.
        """
        last = after
        while True:
            batch = await self.read(workflow_id, last)
            if batch:
                yield batch
                last = batch[-1].seq
                if ended(batch[-1]):
                    return
                continue
            if await closed():
                if tail := await self.read(workflow_id, last):
                    yield tail
                return
            await asyncio.sleep(poll)


def ended(event: AgentEvent) -> bool:
    """Whether a follower stops after ``event``: the run's end, or its park for a decision."""
    if event.type != "agent.end":
        return False
    return event.status in _FINAL or event.status == "awaiting_approval"


async def _tail_seq(artifacts: ArtifactStore, workflow_id: str) -> int:
    newest = await artifacts.read(run_id=log_key(workflow_id), role=_ROLE, max_artifacts=1)
    items = _items(newest[-1].content) if newest else []
    return _seq(items[-1]) if items else 0


def _items(content: str) -> list[JsonObject]:
    """The events of one logged batch (a JSON array of event objects)."""
    return cast("list[JsonObject]", json.loads(content))


def _seq(event: Mapping[str, JsonValue]) -> int:
    """The ``seq`` of a logged event.

    Raises:
        ValueError: The event has no number for a seq.
    """
    seq = event["seq"]
    if not isinstance(seq, int | float | str):
        raise ValueError(f"An event's seq is a number, not {seq!r}.")
    return int(seq)


def publish_activity(name: str, channel: EventChannel) -> Callable[[str, str], Awaitable[int]]:
    """The activity that logs one batch of a workflow's events (idempotent by seq)."""

    @activity.defn(name=name)
    async def publish(workflow_id: str, events: str) -> int:
        return await channel.append(workflow_id, _items(events))

    return publish


@dataclass(kw_only=True, slots=True)
class WorkflowEvents:
    """Workflow side: the loop's events, batched to the ``publish`` activity in order.

    Events collect while the workflow runs; one task hands each collected batch to the
    activity, one at a time, whenever the loop waits (on a model call, a tool, a decision),
    so a batch holds what the loop yielded since the last. Deterministic: a replay makes
    the same batches, answered from the history.
    """

    activity: str | None
    renumber: bool = False
    """Number the events anew, one seq across runs (a session's turns are runs)."""
    seq: int = 0
    """With ``renumber``: the last seq handed out (a session carries it across runs)."""
    patch: str = _PATCH
    """The patch marker that tells a workflow started before it published its events."""
    _on: bool | None = None
    _buffer: list[str] = field(default_factory=list[str])
    _sender: asyncio.Task[None] | None = None

    async def drain(self, stream: AgentStream[_OutputT]) -> RunResult[_OutputT]:
        """Run ``stream`` to its end, publishing each event; its result.

        A run started before its worker published events replays as it ran: the patch
        marker tells, so events can be turned on while runs are in flight.
        """
        if self._on is None:
            self._on = self.activity is not None and workflow.patched(self.patch)
        if not self._on:
            return await stream.drain()
        async with stream:
            async for event in stream:
                if self.renumber:
                    self.seq += 1
                    event = replace(event, seq=self.seq)  # noqa: PLW2901 - the one published
                self._buffer.append(dump_event(event).decode())
                if self._sender is None or self._sender.done():
                    self._sender = asyncio.create_task(self._send())
        return stream.result

    async def flush(self) -> None:
        """Wait until every event collected so far is published."""
        if self._sender is not None:
            await self._sender

    async def _send(self) -> None:
        assert self.activity is not None
        workflow_id = workflow.info().workflow_id
        while self._buffer:
            batch, self._buffer = self._buffer, []
            try:
                await workflow.execute_activity(
                    self.activity,
                    args=[workflow_id, "[" + ",".join(batch) + "]"],
                    result_type=int,
                    start_to_close_timeout=_PUBLISH_TIMEOUT,
                    retry_policy=_PUBLISH_RETRY,
                    summary="events",
                )
            except ActivityError as error:  # the store is down: the run goes on without them
                workflow.logger.warning("Events of the run were not logged: %s", error.cause)
