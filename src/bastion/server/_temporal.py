"""Served runs as Temporal workflows: started, viewed, decided and followed through a client.

A run's id is its workflow's id. The workers (``bastion worker``) run the agents and publish
each run's events into the server's store, from which the server streams them.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Iterable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from temporalio.client import Client, WorkflowExecution, WorkflowExecutionStatus
from temporalio.service import RPCError, RPCStatusCode

from bastion.core import UserError
from bastion.distributed import TemporalAgent, WorkflowStatus
from bastion.distributed._events import EventChannel
from bastion.distributed._following import follow_batches
from bastion.tools import ApprovalDecision, InterruptResolution

from ._errors import NotFound, Unavailable
from ._events import LoggedEvent
from ._items import call_item, usage_view
from ._models import Accepted, PendingItem, ResumeRun, RunView

if TYPE_CHECKING:
    from temporalio.client import WorkflowExecutionDescription

    from bastion.agent import Agent
    from bastion.distributed import WorkflowInterrupt
    from bastion.stores import Stores

    from ._auth import Caller

__all__ = ["TemporalRuns"]

_LIST_BATCH = 16
"""How many listed workflows are asked for their status at once."""
_LIST_WAIT = timedelta(seconds=2)
"""How long a listed run's status query waits for a worker."""
_VIEW_WAIT = timedelta(seconds=10)
"""How long one run's status query waits for a worker before the answer is 503."""
_UNANSWERED = frozenset({RPCStatusCode.DEADLINE_EXCEEDED, RPCStatusCode.CANCELLED})
"""How a query that no worker answered in time fails (the server's deadline, or ours)."""
_MAX_PARKED = 1_000
"""At most this many parked runs are listed by ``GET /approvals``."""
_CLOSED = {
    WorkflowExecutionStatus.COMPLETED: "completed",
    WorkflowExecutionStatus.FAILED: "failed",
    WorkflowExecutionStatus.CANCELED: "aborted",
    WorkflowExecutionStatus.TERMINATED: "aborted",
    WorkflowExecutionStatus.TIMED_OUT: "failed",
}


class TemporalRuns:
    """The served agents' runs on a Temporal server (its client connected at startup)."""

    def __init__(
        self,
        agents: Mapping[str, Agent[Any, Any]],
        stores: Stores,
        target: str | Client,
        *,
        poll: float,
        stopping: asyncio.Event,
    ) -> None:
        # The server is a client of the workflows: the served store carries their events
        # and, for a governed agent, names where its workers count (this side counts none).
        self.agents = {
            name: TemporalAgent(
                agent,
                events=stores,
                counters=stores if agent.config.governance is not None else None,
            )
            for name, agent in agents.items()
        }
        self._by_type = {a.workflow_name: a for a in self.agents.values()}
        self.channel = EventChannel(stores=stores, _open=True)  # the app opens the store
        self._target = target
        self.poll = poll
        self.stopping = stopping
        self._client = target if isinstance(target, Client) else None

    async def connect(self) -> None:
        """Connect to the Temporal server (at startup)."""
        if self._client is None:
            assert isinstance(self._target, str)
            try:
                self._client = await Client.connect(self._target)
            except RuntimeError as error:
                raise UserError(
                    f"Cannot reach the Temporal server at {self._target!r}: {error}"
                ) from None

    @property
    def client(self) -> Client:
        """The connected client."""
        if self._client is None:
            raise UserError("The server is not connected to Temporal yet (it is starting).")
        return self._client

    def agent(self, name: str | None) -> TemporalAgent[Any]:
        """The served agent named ``name`` (the only one when ``None``)."""
        if name is None and len(self.agents) == 1:
            return next(iter(self.agents.values()))
        if name is None:
            raise UserError(f"Name the agent to run: one of {sorted(self.agents)}.")
        found = self.agents.get(name)
        if found is None:
            raise NotFound(f"No agent {name!r} is served (served: {sorted(self.agents)}).")
        return found

    async def start(self, caller: Caller, agent_name: str | None, text: str) -> Accepted:
        """Start a run of the agent as a workflow (the caller's tenant in its memo)."""
        agent = self.agent(agent_name)
        workflow_id = f"{agent.agent.name}-{uuid.uuid4().hex}"
        await self.client.start_workflow(
            agent.workflow_name,
            text,
            id=workflow_id,
            task_queue=agent.task_queue,
            memo={"agent": agent.agent.name, "tenant": caller.tenant},
        )
        return accepted(workflow_id, agent.agent.name)

    async def check(self, run_id: str, caller: Caller) -> None:
        """Raise :class:`NotFound` unless the caller may see the run (asks no worker)."""
        await self._visible(run_id, caller)

    async def view(self, run_id: str, caller: Caller) -> RunView:
        """The run as the workflow tells it, if the caller may see it."""
        described, agent, tenant = await self._visible(run_id, caller)
        return await self._view(described, agent, tenant, listing=False)

    async def newest(
        self, caller: Caller, *, agent: str | None, status: str | None, tenant: str | None,
        count: int,
    ) -> list[RunView]:  # fmt: skip
        """The ``count`` newest runs of the served agents the caller sees, filtered.

        Temporal's visibility lists the workflows (newest first) and narrows them by
        agent and by running or closed; the tenant (in each workflow's memo) and the exact
        status (a running workflow may be parked) are checked on each.
        """
        query = self._query(agent, status)
        found: list[RunView] = []
        if query is None or count <= 0:
            return found
        batch: list[tuple[WorkflowExecution, TemporalAgent[Any], str | None]] = []
        async for execution in self.client.list_workflows(query):
            served = self._by_type.get(execution.workflow_type)
            owner = _tenant(await execution.memo())
            if served is None or not caller.sees(owner) or tenant not in (None, owner):
                continue
            batch.append((execution, served, owner))
            if len(batch) == _LIST_BATCH:
                found += await self._listed(batch, status)
                batch = []
                if len(found) >= count:
                    break
        return (found + await self._listed(batch, status))[:count]

    async def _listed(
        self,
        batch: list[tuple[WorkflowExecution, TemporalAgent[Any], str | None]],
        status: str | None,
    ) -> list[RunView]:
        """The views of a batch of listed workflows, asked at once; those with ``status``."""
        views = await asyncio.gather(*(self._view(*item, listing=True) for item in batch))
        return [view for view in views if status in (None, view.status)]

    async def _status(
        self, agent: TemporalAgent[Any], run_id: str, listing: bool
    ) -> WorkflowStatus:
        """The run's status query; unanswered, ``running`` when ``listing``.

        Raises:
            Unavailable: No worker answered for the run (when not listing).
        """
        wait = _LIST_WAIT if listing else _VIEW_WAIT
        try:
            return await agent.status(self.client, run_id, rpc_timeout=wait)
        except RPCError as error:
            if error.status not in _UNANSWERED:
                raise
            if listing:  # workers restart, or none runs yet
                return WorkflowStatus(status="running")
            raise Unavailable(
                f"No worker answered for run {run_id}: start 'bastion worker' for agent "
                f"{agent.agent.name!r} ({error.message})."
            ) from None

    def _query(self, agent: str | None, status: str | None) -> str | None:
        """The visibility query of the served agents' workflows (``None``: none can match)."""
        served = [a for a in self.agents.values() if agent in (None, a.agent.name)]
        if not served:
            return None
        clauses = [_types(served)]
        if status in ("running", "awaiting_approval"):
            clauses.append("ExecutionStatus = 'Running'")
        elif status is not None:
            clauses.append("ExecutionStatus != 'Running'")
        return " AND ".join(f"({c})" for c in clauses if c)

    async def _view(
        self,
        described: WorkflowExecution,
        agent: TemporalAgent[Any],
        tenant: str | None,
        *,
        listing: bool,
    ) -> RunView:
        """The run's view, as ``GET /runs/{id}`` shows it.

        Raises:
            Unavailable: No worker answered the run's status query (a run of a listing is
                shown ``running`` instead, with nothing pending).
        """
        run_id = described.id
        status, pending, usage, output, error = "running", list[PendingItem](), {}, None, None
        closed = _CLOSED.get(described.status) if described.status else None
        now = None if closed is not None else await self._status(agent, run_id, listing)
        if now is not None and now.status in ("running", "awaiting_approval"):
            status, pending, usage = now.status, _pending(run_id, now), usage_view(now.usage)
        elif now is not None or described.status == WorkflowExecutionStatus.COMPLETED:
            # the run ended (its workflow may still be publishing its last events)
            result = await agent.result(self.client, run_id)
            status, output, usage = result.status, result.output, usage_view(result.usage)
            if result.error is not None:
                error = {"code": result.error.code, "message": result.error.message}
        else:
            status = closed or "failed"
            error = {"code": "workflow_closed", "message": f"The workflow is {status}."}
        started = described.start_time or datetime.now(UTC)
        return RunView(
            run_id=run_id, agent=agent.agent.name, status=status,
            tenant_id=tenant, session_id=None, metadata={}, created_at=started,
            updated_at=described.close_time or started, output=output, error=error,
            usage=usage, pending=pending,
        )  # fmt: skip

    async def pending(self, caller: Caller) -> list[PendingItem]:
        """What the caller's parked runs (of the served agents) wait for, newest first."""
        parked = await self.newest(
            caller, agent=None, status="awaiting_approval", tenant=None, count=_MAX_PARKED
        )
        return [item for view in parked for item in view.pending]

    async def decide(self, run_id: str, decision: ApprovalDecision, caller: Caller) -> Accepted:
        """Send one decision to the parked workflow as its ``decide`` update."""
        _, agent, _ = await self._visible(run_id, caller)
        waiting = await agent.decide(self.client, run_id, decision)
        return accepted(run_id, agent.agent.name, undecided=waiting)

    async def resolve(
        self, run_id: str, resolution: InterruptResolution, caller: Caller
    ) -> Accepted:
        """Send one decision on a governance interrupt as the workflow's ``resolve`` update."""
        _, agent, _ = await self._visible(run_id, caller)
        waiting = await agent.resolve(self.client, run_id, resolution)
        return accepted(run_id, agent.agent.name, undecided=waiting)

    async def resume(self, run_id: str, body: ResumeRun, caller: Caller) -> Accepted:
        """Send every decision at once: interrupts as ``resolve``, calls as ``decide``.

        Raises:
            UserError: No decision, or the workflow refused one.
        """
        _, agent, _ = await self._visible(run_id, caller)
        approvals = [ApprovalDecision(**a.model_dump()) for a in body.approvals]
        interrupts = [InterruptResolution(**i.model_dump()) for i in body.interrupts]
        if not approvals and not interrupts:
            raise UserError("Give at least one decision: approvals or interrupts.")
        waiting: list[str] = []
        if interrupts:
            waiting += await agent.resolve(self.client, run_id, *interrupts)
        if approvals:
            waiting += await agent.decide(self.client, run_id, *approvals)
        return accepted(run_id, agent.agent.name, undecided=waiting)

    async def cancel(self, run_id: str, caller: Caller) -> Accepted:
        """Cancel a workflow still running: the run ends ``aborted``.

        Raises:
            NotFound: No such run for the caller, or it is closed already.
        """
        described, agent, _ = await self._visible(run_id, caller)
        if described.status is not None and described.status in _CLOSED:
            raise NotFound(f"Run {run_id} is not in flight: its workflow is closed.")
        await agent.cancel(self.client, run_id)
        return accepted(run_id, agent.agent.name)

    def events(self, run_id: str, after: int) -> AsyncIterator[list[LoggedEvent]]:
        """The run's events after ``after``, in the batches read (check the caller first)."""

        async def batches() -> AsyncIterator[list[LoggedEvent]]:
            found = follow_batches(
                self.channel, self.client, run_id, after=after, poll=self.poll,
                stop=self.stopping,
            )  # fmt: skip
            async for batch in found:
                yield [LoggedEvent.of(event) for event in batch]

        return batches()

    async def _visible(
        self, run_id: str, caller: Caller
    ) -> tuple[WorkflowExecutionDescription, TemporalAgent[Any], str | None]:
        """The workflow of a served agent's run the caller may see: its agent and tenant.

        A run started elsewhere (``bastion run --temporal``) has no tenant: only callers
        of a server without auth see it.
        """
        handle = self.client.get_workflow_handle(run_id)
        try:
            described = await handle.describe()
        except RPCError as error:
            if error.status == RPCStatusCode.NOT_FOUND:
                raise NotFound(f"No run {run_id}.") from None
            raise
        agent = self._by_type.get(described.workflow_type)
        tenant = _tenant(await described.memo())
        if agent is None or not caller.sees(tenant):
            raise NotFound(f"No run {run_id}.")
        return described, agent, tenant


def _types(agents: Iterable[TemporalAgent[Any]]) -> str:
    """A visibility clause naming the agents' workflow types.

    Empty for a name it cannot quote: the check of each workflow's type filters then.
    """
    names = [a.workflow_name for a in agents]
    if any("'" in n or "\\" in n for n in names):
        return ""
    return " OR ".join(f"WorkflowType = '{n}'" for n in names)


def accepted(run_id: str, agent: str, *, undecided: list[str] | None = None) -> Accepted:
    """The answer to a start or a decision."""
    return Accepted(
        run_id=run_id,
        agent=agent,
        events=f"/runs/{run_id}/events",
        undecided=undecided or [],
        resumed=not undecided,
    )


def _tenant(memo: Mapping[str, object]) -> str | None:
    tenant = memo.get("tenant")
    return None if tenant is None else str(tenant)


def _pending(run_id: str, status: WorkflowStatus) -> list[PendingItem]:
    calls = [
        call_item(run_id, p.tool_call_id, p.tool_name, p.arguments, p.reason)
        for p in status.pending
    ]
    interrupts = [
        PendingItem(id=i.id, kind="interrupt", run_id=run_id, reason=i.reason, limit=_limit(i))
        for i in status.interrupts
    ]
    return calls + interrupts


def _limit(interrupt: WorkflowInterrupt) -> dict[str, object] | None:
    """The limit a budget interrupt waits on, as the local server shows it."""
    if interrupt.limit_type is None:
        return None
    return {
        "oracle": interrupt.oracle,
        "limit_type": interrupt.limit_type,
        "window": interrupt.window,
        "current": interrupt.current,
        "max": interrupt.max,
        "approvers": list(interrupt.approvers),
    }
