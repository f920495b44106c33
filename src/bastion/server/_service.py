"""What the routes do, tenant-scoped: a run another tenant owns is "not found", never data."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Mapping
from datetime import UTC, datetime

from pydantic import JsonValue
from starlette.requests import HTTPConnection

from bastion.core import RunStatus
from bastion.stores import JournalStore
from bastion.tools import ApprovalDecision, Directive, InterruptResolution

from ._auth import Caller, TokenAuth
from ._choices import Choice
from ._errors import NotFound
from ._events import LoggedEvent
from ._follow import follow_batches
from ._manager import RunManager
from ._models import Accepted, PendingItem, ResumeRun, RunList, RunView
from ._records import RunFacts, load_run, pending_items, run_view

__all__ = ["Service"]

_OPEN = Caller(tenant=None, scoped=False)
_SCAN = 100


class Service:
    """The server's runs, approvals and event streams, as one caller may see them."""

    def __init__(self, manager: RunManager, auth: TokenAuth | None, *, poll: float) -> None:
        self.manager = manager
        self.auth = auth
        self.poll = poll
        self.stopping = asyncio.Event()
        # Decisions on runs waiting for several items, until the last one is decided.
        self.decided: dict[str, dict[str, Choice]] = {}

    @property
    def journal(self) -> JournalStore:
        """The journal store of the served agents."""
        return self.manager.stores.journal

    def caller(self, conn: HTTPConnection) -> Caller:
        """The caller of a request (everyone is unscoped when the server has no auth)."""
        return _OPEN if self.auth is None else self.auth.caller(conn)

    async def view(self, run_id: str, caller: Caller) -> RunView:
        """The run, if the caller may see it.

        Raises:
            NotFound: No such run, or another tenant's.
        """
        facts = await load_run(self.journal, run_id)
        if facts is not None and caller.sees(facts.state.tenant_id):
            return run_view(facts)
        live = self.manager.live.get(run_id)
        if facts is None and live is not None and caller.sees(live.tenant):
            now = datetime.now(UTC)  # started here, not yet journaled
            return RunView(
                run_id=run_id, agent=live.agent, status="running", tenant_id=live.tenant,
                session_id=None, metadata={}, created_at=now, updated_at=now, usage={},
                pending=[],
            )  # fmt: skip
        raise NotFound(f"No run {run_id}.")

    async def facts(self, run_id: str, caller: Caller) -> RunFacts:
        """The run's journal facts, if the caller may see it.

        Raises:
            NotFound: No such run (in the store), or another tenant's.
        """
        facts = await load_run(self.journal, run_id)
        if facts is None or not caller.sees(facts.state.tenant_id):
            raise NotFound(f"No run {run_id}.")
        return facts

    async def check(self, run_id: str, caller: Caller) -> None:
        """Raise :class:`NotFound` unless the caller may see the run."""
        await self.view(run_id, caller)

    async def runs(
        self,
        caller: Caller,
        *,
        agent: str | None,
        status: RunStatus | None,
        tenant: str | None,
        limit: int,
        offset: int,
    ) -> RunList:
        """A page of the runs the caller sees, newest first, filtered."""
        found: list[RunView] = []
        skipped, start = 0, 0
        while True:
            page = await self.journal.list_runs(
                status=status, agent=agent, limit=_SCAN, offset=start
            )
            start += len(page.runs)
            for record in page.runs:
                facts = await load_run(self.journal, record.run_id)
                if facts is None or not caller.sees(facts.state.tenant_id):
                    continue
                if tenant is not None and facts.state.tenant_id != tenant:
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                if len(found) == limit:
                    return RunList(runs=found, next_offset=offset + limit)
                found.append(run_view(facts))
            if len(page.runs) < _SCAN:
                return RunList(runs=found, next_offset=None)

    async def pending(self, caller: Caller) -> list[PendingItem]:
        """Everything the caller's suspended runs wait for."""
        items: list[PendingItem] = []
        offset: int | None = 0
        while offset is not None:
            page = await self.runs(
                caller, agent=None, status="awaiting_approval", tenant=None, limit=_SCAN,
                offset=offset,
            )  # fmt: skip
            items.extend(item for run in page.runs for item in run.pending)
            offset = page.next_offset
        return items

    async def start(
        self,
        caller: Caller,
        agent_name: str | None,
        input: str,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> Accepted:
        """Start a run for the caller's tenant (in a conversation, with metadata, if given)."""
        agent = self.manager.agent(agent_name)
        run_id = await self.manager.start(
            agent, input, tenant=caller.tenant, session_id=session_id, metadata=metadata
        )
        return _accepted(run_id, agent.name)

    async def resume(self, run_id: str, body: ResumeRun, caller: Caller) -> Accepted:
        """Resume a suspended run with every decision it waits for."""
        approvals = [ApprovalDecision(**a.model_dump()) for a in body.approvals]
        interrupts = [InterruptResolution(**i.model_dump()) for i in body.interrupts]
        return await self._resume(run_id, approvals + interrupts, caller)

    async def decide(self, run_id: str, item_id: str, choice: Choice, caller: Caller) -> Accepted:
        """Decide one pending item; the run resumes once every item is decided."""
        facts = await self.facts(run_id, caller)
        waiting = {item.id for item in pending_items(facts.state)}
        if facts.record.status != "awaiting_approval" or item_id not in waiting:
            raise NotFound(f"Run {run_id} does not wait for a decision on {item_id!r}.")
        decided = self.decided.setdefault(run_id, {})
        decided[item_id] = choice
        undecided = sorted(waiting - decided.keys())
        if undecided:
            return _accepted(run_id, facts.record.agent, undecided=undecided, resumed=False)
        return await self._resume(run_id, [decided[i] for i in sorted(waiting)], caller)

    async def _resume(self, run_id: str, choices: list[Choice], caller: Caller) -> Accepted:
        facts = await self.facts(run_id, caller)
        agent = self.manager.agent(facts.record.agent)
        directive = Directive(
            approvals=[c for c in choices if isinstance(c, ApprovalDecision)],
            interrupts=[c for c in choices if isinstance(c, InterruptResolution)],
        )
        await self.manager.resume(agent, run_id, directive, facts.state.tenant_id)
        self.decided.pop(run_id, None)
        return _accepted(run_id, agent.name)

    def events(self, run_id: str, after: int) -> AsyncIterator[list[LoggedEvent]]:
        """The run's events after ``after``, in the batches written (check the caller first)."""
        manager = self.manager
        return follow_batches(
            run_id, after, log=manager.log, hub=manager.hub, journal=self.journal,
            poll=self.poll, stopping=self.stopping,
        )  # fmt: skip


def _accepted(
    run_id: str, agent: str, *, undecided: list[str] | None = None, resumed: bool = True
) -> Accepted:
    return Accepted(
        run_id=run_id,
        agent=agent,
        events=f"/runs/{run_id}/events",
        undecided=undecided or [],
        resumed=resumed,
    )
