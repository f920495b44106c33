"""Client side of a workflow's live events: the event store of an agent, and its followers."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Awaitable
from typing import TYPE_CHECKING

from temporalio.client import WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from bastion.core import UserError
from bastion.stores import Stores, open_store

from ._events import EventChannel, publish_activity

if TYPE_CHECKING:
    from collections.abc import Callable

    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import Agent
    from bastion.core import AgentEvent
    from bastion.stores import Stores

__all__ = ["event_channel", "follow_batches", "follow_events", "publishing"]

_CHECK_EVERY = 1.0
"""Seconds between checks that a followed workflow still runs, while nothing is logged."""


def event_channel(events: Stores | str | None, agent: Agent[object, object]) -> EventChannel | None:
    """The store a Temporal agent's events go to: ``events``, else the agent's store."""
    if events is None:
        store = agent.config.store
        return None if store is None else EventChannel(stores=store)
    if isinstance(events, Stores):
        return EventChannel(stores=events)
    if isinstance(events, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        return EventChannel(stores=open_store(events), owned=True)
    raise UserError(
        f"events must be a Stores or a store URL such as 'sqlite:///runs.db', got {events!r}."
    )


def publishing(
    name: str | None, channel: EventChannel | None
) -> tuple[Callable[[str, str], Awaitable[int]], ...]:
    """The publish activity, when the agent's events are published."""
    if name is None or channel is None:
        return ()
    return (publish_activity(name, channel),)


async def follow_batches(
    channel: EventChannel,
    client: Client,
    workflow_id: str,
    *,
    after: int,
    poll: float,
    stop: asyncio.Event | None = None,
) -> AsyncIterator[list[AgentEvent]]:
    """Batches of the workflow's events after ``after``, until its run ends or parks.

    ``stop``: once set, the batches end at the next idle read (a server shutting down).

    Raises:
        UserError: No workflow ``workflow_id``.
    """
    handle = client.get_workflow_handle(workflow_id)
    await _running(handle)
    checked = asyncio.get_running_loop().time()

    async def closed() -> bool:
        nonlocal checked
        if stop is not None and stop.is_set():
            return True
        now = asyncio.get_running_loop().time()
        if now - checked < _CHECK_EVERY:
            return False
        checked = now
        return not await _running(handle)

    async for batch in channel.follow(workflow_id, after, poll=poll, closed=closed):
        yield batch


async def follow_events(
    channel: EventChannel,
    client: Client,
    workflow_id: Awaitable[str],
    *,
    after: int,
    poll: float,
) -> AsyncIterator[AgentEvent]:
    """The events of :func:`follow_batches`, one by one (the workflow id awaited first)."""
    followed = await workflow_id
    async for batch in follow_batches(channel, client, followed, after=after, poll=poll):
        for event in batch:
            yield event


async def _running(handle: WorkflowHandle[object, object]) -> bool:
    try:
        described = await handle.describe()
    except RPCError as error:
        if error.status == RPCStatusCode.NOT_FOUND:
            raise UserError(f"No workflow {handle.id!r} on the Temporal server.") from None
        raise
    return described.status == WorkflowExecutionStatus.RUNNING
