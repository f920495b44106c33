"""What waits below an agent workflow: its sub-agents' parked workflows, reported upwards.

A sub-agent runs as a child workflow and parks there for its approvals and interrupts,
while the parent's call waits for it. So that the parent's ``status`` shows them (and its
``settle`` returns), a parked sub-agent sends the ``child_waiting`` signal to its parent
with everything waiting in it and below it, and again, empty, once decided; a parent that
is itself a sub-agent passes what it heard on to its own parent. The client sends each
decision to the workflow that holds the call (:func:`route`).
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, TypeVar

from temporalio import workflow

from ._views import ChildWaiting, waiting_adapter

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Iterable, Sequence

    from temporalio.client import Client, WorkflowHandle

    from bastion.tools import ApprovalRequest

    from ._views import WorkflowInterrupt, WorkflowStatus

__all__ = ["Below", "route"]

_T = TypeVar("_T")

_SIGNAL = "child_waiting"


class Below:
    """An agent workflow's side: what its sub-agents wait for, and its report upwards."""

    def __init__(self) -> None:
        self._below: dict[str, list[ChildWaiting]] = {}  # by the reporting child's id
        self._report_to: str | None = None  # the parent, for a sub-agent's workflow

    def report_to(self, parent_workflow_id: str) -> None:
        """Report what waits here to the workflow ``parent_workflow_id`` (a sub-agent's)."""
        self._report_to = parent_workflow_id

    def waiting_below(self) -> list[ChildWaiting]:
        """The sub-agent workflows below this one that wait for decisions."""
        return [item for items in self._below.values() for item in items]

    def with_below(self, status: WorkflowStatus) -> WorkflowStatus:
        """``status`` with what waits below: ``awaiting_approval`` while anything does."""
        below = self.waiting_below()
        if not below:
            return status
        name = "awaiting_approval" if status.status == "running" else status.status
        return replace(
            status,
            status=name,
            pending=[*status.pending, *(p for c in below for p in c.pending)],
            interrupts=[*status.interrupts, *(i for c in below for i in c.interrupts)],
            children=below,
        )

    async def report(
        self,
        agent: str,
        pending: Iterable[ApprovalRequest],
        interrupts: Iterable[WorkflowInterrupt],
    ) -> None:
        """Tell the parent (if any) what waits here now: ``pending`` and below."""
        if self._report_to is None:
            return
        here = ChildWaiting(
            workflow_id=workflow.info().workflow_id,
            agent=agent,
            pending=list(pending),
            interrupts=list(interrupts),
        )
        waiting = [here] if here.pending or here.interrupts else []
        payload = waiting_adapter().dump_json([*waiting, *self.waiting_below()]).decode()
        parent = workflow.get_external_workflow_handle(self._report_to)
        await parent.signal(_SIGNAL, args=[workflow.info().workflow_id, payload])

    async def heard(self, child: str, payload: str) -> None:
        """A sub-agent reported what waits in it; pass it on upwards."""
        waiting = waiting_adapter().validate_json(payload)
        if waiting:
            self._below[child] = waiting
        else:
            self._below.pop(child, None)
        await self.report_up()

    async def report_up(self) -> None:
        """Report upwards what this workflow waits for now (overridden by the workflow)."""


async def route(  # noqa: PLR0917 - one routing, its parts
    client: Client,
    workflow_id: str,
    status_of: Callable[[Client, str], Awaitable[WorkflowStatus]],
    items: Sequence[_T],
    key: Callable[[_T], str],
    send: Callable[[WorkflowHandle[object, object], list[_T]], Awaitable[list[str]]],
    *,
    calls: bool,
) -> list[str]:
    """Send each decision to the workflow that holds its call (``calls``) or interrupt.

    A call of a sub-agent below the run (in its status's ``children``) is decided in the
    sub-agent's workflow, any other in the run's. Returns the ids still waiting, in all
    of them. No decision at all goes to ``send`` as is (which refuses it).
    """
    if not items:
        return await send(client.get_workflow_handle(workflow_id), [])
    status = await status_of(client, workflow_id)
    held = _held(status, calls=calls)
    groups: dict[str, list[_T]] = {}
    for item in items:
        groups.setdefault(held.get(key(item), workflow_id), []).append(item)
    left: list[str] = []
    for owner, group in groups.items():
        left += await send(client.get_workflow_handle(owner), group)
    for child in status.children:
        if child.workflow_id not in groups:
            left += _ids(child.pending, child.interrupts, calls=calls)
    if workflow_id not in groups:
        left += [i for i in _ids(status.pending, status.interrupts, calls=calls) if i not in held]
    return left


def _held(status: WorkflowStatus, *, calls: bool) -> dict[str, str]:
    """The sub-agents' call (or interrupt) ids, each with the workflow that holds it."""
    held: dict[str, str] = {}
    for child in status.children:
        for key in _ids(child.pending, child.interrupts, calls=calls):
            held.setdefault(key, child.workflow_id)
    return held


def _ids(
    pending: Iterable[ApprovalRequest], interrupts: Iterable[WorkflowInterrupt], *, calls: bool
) -> list[str]:
    return [p.tool_call_id for p in pending] if calls else [i.id for i in interrupts]
