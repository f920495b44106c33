"""Printing a workflow run's events as they are published, as a local ``bastion run`` does."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, cast

from bastion.core import AgentEvent, dump_event

from ._common import Output, console
from ._render import Renderer

if TYPE_CHECKING:
    from temporalio.client import Client

    from bastion.distributed import TemporalAgent, WorkflowStatus, WorkflowStatusName

__all__ = ["EventPrinter", "event_printer", "logged_seq", "show_run"]

EventPrinter = Callable[[AgentEvent], None]


@contextlib.contextmanager
def event_printer(agent: TemporalAgent[object], output: Output) -> Generator[EventPrinter | None]:
    """How to print each event of ``agent``'s runs; ``None`` when it publishes none.

    JSON output writes each event on its line; otherwise the local run's renderer shows
    them (live on a terminal).
    """
    if agent.events is None:
        yield None
    elif output == "json":
        yield _print_json
    else:
        out = console(plain=output == "plain")
        with Renderer(out, live=out.is_terminal) as renderer:
            yield renderer.handle


async def show_run(
    agent: TemporalAgent[object],
    client: Client,
    workflow_id: str,
    show: EventPrinter,
    after: int = 0,
) -> WorkflowStatus:
    """Print the run's events after seq ``after`` until it ends or parks; its status then."""
    from bastion.distributed import WorkflowStatus

    end: AgentEvent | None = None
    async for event in agent.follow(client, workflow_id, after=after):
        show(event)
        end = event
    if end is not None and end.type == "agent.end" and end.status != "awaiting_approval":
        return WorkflowStatus(status=cast("WorkflowStatusName", end.status))  # no update now
    return await agent.settle(client, workflow_id)  # parked (or its events were lost)


async def logged_seq(agent: TemporalAgent[object], workflow_id: str) -> int:
    """The seq of the last event the run logged (0 when none was)."""
    assert agent.events is not None
    return await agent.events.last_seq(workflow_id)


def _print_json(event: AgentEvent) -> None:
    sys.stdout.write(dump_event(event).decode() + "\n")
    sys.stdout.flush()
