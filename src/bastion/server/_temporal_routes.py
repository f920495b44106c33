"""The HTTP routes of Temporal runs: the paths and bodies of local runs, on workflows."""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse

from bastion.core import UserError
from bastion.stores import MAX_SEQ
from bastion.tools import ApprovalDecision, InterruptResolution

from ._auth import Caller
from ._choices import denial, raised_limit
from ._errors import NotFound
from ._follow import sse_response
from ._models import (
    Accepted,
    Decision,
    PendingItem,
    RaiseBudget,
    ResumeRun,
    RunList,
    RunQuery,
    RunView,
    StartRun,
)
from ._routes import _ERRORS, Svc, _after, _caller, decision_route  # pyright: ignore[reportPrivateUsage]
from ._temporal import TemporalRuns
from ._trace import build_trace
from ._trace_models import Trace

__all__ = ["temporal_router"]


def _runs(request: Request) -> TemporalRuns:
    runs: TemporalRuns = request.app.state.bastion_temporal
    return runs


Runs = Annotated[TemporalRuns, Depends(_runs)]
MAX_OFFSET = 10_000
"""How deep a page of the merged run list may start (each source is read from its newest)."""
Who = Annotated[Caller, Depends(_caller)]
temporal_router = APIRouter(responses=_ERRORS)


@temporal_router.post("/runs", status_code=202, response_model=Accepted, tags=["runs"])
async def start_run(body: StartRun, runs: Runs, caller: Who) -> Accepted:
    """Start a run as a workflow; follow its events at ``/runs/{run_id}/events``."""
    if body.session_id is not None or body.metadata:
        raise UserError("Temporal runs take no session_id or metadata yet: send input only.")
    return await runs.start(caller, body.agent, body.input)


@temporal_router.get("/runs", response_model=RunList, tags=["runs"])
async def list_runs(
    runs: Runs, service: Svc, caller: Who, query: Annotated[RunQuery, Query()]
) -> RunList:
    """The runs the caller sees, newest first: the served agents' workflows and local runs.

    Local runs are those the server's store journals itself (a session's turns).
    """
    if query.offset > MAX_OFFSET:
        raise UserError(f"offset may be at most {MAX_OFFSET} here, got {query.offset}.")
    end = query.offset + query.limit
    agent, status, tenant = query.agent, query.status, query.tenant
    remote = await runs.newest(caller, agent=agent, status=status, tenant=tenant, count=end + 1)
    local = await service.runs(
        caller, agent=agent, status=status, tenant=tenant, limit=end + 1, offset=0
    )  # each source's newest: enough for this page and one more
    merged = sorted([*remote, *local.runs], key=lambda run: run.created_at, reverse=True)
    return RunList(runs=merged[query.offset : end], next_offset=end if len(merged) > end else None)


@temporal_router.get("/runs/{run_id}", response_model=RunView, tags=["runs"])
async def get_run(run_id: str, runs: Runs, caller: Who) -> RunView:
    """One run: status, output or error, usage, and what it waits for."""
    return await runs.view(run_id, caller)


@temporal_router.post(
    "/runs/{run_id}/resume", status_code=202, response_model=Accepted, tags=["runs"]
)
async def resume_run(run_id: str, body: ResumeRun, runs: Runs, caller: Who) -> Accepted:
    """Decide the calls and interrupts the run waits for, at once (its updates)."""
    return await runs.resume(run_id, body, caller)


@temporal_router.post(
    "/runs/{run_id}/cancel", status_code=202, response_model=Accepted, tags=["runs"]
)
async def cancel_run(run_id: str, runs: Runs, caller: Who) -> Accepted:
    """Cancel the run's workflow; it ends ``aborted`` (what it waits for is denied)."""
    return await runs.cancel(run_id, caller)


@temporal_router.get(
    "/runs/{run_id}/events",
    tags=["runs"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    run_id: str,
    runs: Runs,
    caller: Who,
    last_event_id: Annotated[str | None, Header()] = None,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
) -> StreamingResponse:
    """The run's events as Server-Sent Events; each ``id`` is the event's seq.

    Reconnect with ``Last-Event-ID`` (or ``?after=SEQ``) to get only the events after it.
    """
    await runs.check(run_id, caller)  # no status query: the stream needs no live worker
    return sse_response(runs.events(run_id, _after(last_event_id, after)))


@temporal_router.get("/runs/{run_id}/trace", response_model=Trace, tags=["runs"])
async def run_trace(run_id: str, runs: Runs, service: Svc, caller: Who) -> Trace:
    """The run as a tree of timed spans, built from the events its workers published."""
    view = await runs.view(run_id, caller)
    events = await service.manager.log.read_timed(run_id)
    return build_trace(run_id, "run", events, live=view.status == "running")


@temporal_router.get("/approvals", response_model=list[PendingItem], tags=["approvals"])
async def all_approvals(runs: Runs, caller: Who) -> list[PendingItem]:
    """Every call the caller's parked runs wait for."""
    return await runs.pending(caller)


@temporal_router.get(
    "/runs/{run_id}/approvals", response_model=list[PendingItem], tags=["approvals"]
)
async def run_approvals(run_id: str, runs: Runs, caller: Who) -> list[PendingItem]:
    """What one run waits for (empty unless it is ``awaiting_approval``)."""
    return (await runs.view(run_id, caller)).pending


@decision_route(temporal_router, "approve")
async def approve(run_id: str, item_id: str, body: Decision, runs: Runs, caller: Who) -> Accepted:
    """Approve a call (with ``result``: it already happened; record that instead)."""
    choice = ApprovalDecision(tool_call_id=item_id, granted=True, result=body.result)
    return await runs.decide(run_id, choice, caller)


@decision_route(temporal_router, "deny")
async def deny(run_id: str, item_id: str, body: Decision, runs: Runs, caller: Who) -> Accepted:
    """Deny a call (the model reads the reason), or a budget interrupt (the run fails)."""
    pending = (await runs.view(run_id, caller)).pending
    held = any(p.id == item_id and p.kind == "interrupt" for p in pending)
    choice = denial(item_id, body.reason, interrupt=held)
    if isinstance(choice, InterruptResolution):
        return await runs.resolve(run_id, choice, caller)
    return await runs.decide(run_id, choice, caller)


@decision_route(temporal_router, "raise")
async def raise_budget(
    run_id: str, item_id: str, body: RaiseBudget, runs: Runs, caller: Who
) -> Accepted:
    """Raise the limit a budget interrupt stopped at to ``max`` (the ``resolve`` update)."""
    pending = (await runs.view(run_id, caller)).pending
    item = next((p for p in pending if p.id == item_id and p.limit is not None), None)
    if item is None or item.limit is None:
        raise NotFound(f"Run {run_id} has no pending budget interrupt {item_id!r}.")
    return await runs.resolve(run_id, raised_limit(item, body.max), caller)
