"""The HTTP routes: runs, their event streams, and approvals."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from fastapi.types import DecoratedCallable

from bastion.core import UserError
from bastion.stores import MAX_SEQ
from bastion.tools import ApprovalDecision

from ._auth import Caller
from ._choices import denial, raised_limit
from ._errors import NotFound, error_responses
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
from ._records import pending_items
from ._service import Service

__all__ = ["router"]


def _service(request: Request) -> Service:
    service: Service = request.app.state.bastion
    return service


def _caller(request: Request, service: Annotated[Service, Depends(_service)]) -> Caller:
    return service.caller(request)


Svc = Annotated[Service, Depends(_service)]
Who = Annotated[Caller, Depends(_caller)]

_ERRORS = error_responses(400, 401, 404, 409, 413, 422, 503)
router = APIRouter(responses=_ERRORS)


def decision_route(on: APIRouter, action: str) -> Callable[[DecoratedCallable], DecoratedCallable]:
    """Route ``POST /runs/{run_id}/approvals/{item_id}/<action>`` on ``on`` (202, Accepted)."""
    path = f"/runs/{{run_id}}/approvals/{{item_id}}/{action}"
    return on.post(path, status_code=202, response_model=Accepted, tags=["approvals"])


@router.post("/runs", status_code=202, response_model=Accepted, tags=["runs"])
async def start_run(body: StartRun, service: Svc, caller: Who) -> Accepted:
    """Start a run; follow its events at ``/runs/{run_id}/events``."""
    return await service.start(
        caller, body.agent, body.input, session_id=body.session_id, metadata=body.metadata
    )


@router.get("/runs", response_model=RunList, tags=["runs"])
async def list_runs(service: Svc, caller: Who, query: Annotated[RunQuery, Query()]) -> RunList:
    """The runs the caller sees, newest first."""
    return await service.runs(
        caller, agent=query.agent, status=query.status, tenant=query.tenant,
        limit=query.limit, offset=query.offset,
    )  # fmt: skip


@router.get("/runs/{run_id}", response_model=RunView, tags=["runs"])
async def get_run(run_id: str, service: Svc, caller: Who) -> RunView:
    """One run: status, output or error, usage, and what it waits for."""
    return await service.view(run_id, caller)


@router.post("/runs/{run_id}/cancel", status_code=202, response_model=Accepted, tags=["runs"])
async def cancel_run(run_id: str, service: Svc, caller: Who) -> Accepted:
    """Abort a run in flight on this server; it ends ``aborted``."""
    view = await service.view(run_id, caller)
    service.manager.cancel(run_id)
    return Accepted(run_id=run_id, agent=view.agent, events=f"/runs/{run_id}/events")


@router.post("/runs/{run_id}/resume", status_code=202, response_model=Accepted, tags=["runs"])
async def resume_run(run_id: str, body: ResumeRun, service: Svc, caller: Who) -> Accepted:
    """Resume a suspended run with a decision on every call and interrupt it waits for."""
    return await service.resume(run_id, body, caller)


@router.get("/runs/{run_id}/export", tags=["runs"])
async def export_run(run_id: str, service: Svc, caller: Who) -> StreamingResponse:
    """The run's journal as JSON lines (``run_id``, ``seq``, ``kind``, ``payload``, …)."""
    await service.facts(run_id, caller)
    entries = await service.journal.read(run_id)
    lines = (
        json.dumps(
            {
                "run_id": run_id,
                "seq": e.seq,
                "kind": e.kind,
                "schema_version": e.schema_version,
                "recorded_at": e.recorded_at.isoformat(),
                "payload": e.payload,
            }
        )
        + "\n"
        for e in entries
    )
    return StreamingResponse(iter(lines), media_type="application/x-ndjson")


@router.get(
    "/runs/{run_id}/events",
    tags=["runs"],
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def run_events(
    run_id: str,
    service: Svc,
    caller: Who,
    last_event_id: Annotated[str | None, Header()] = None,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
) -> StreamingResponse:
    """The run's events as Server-Sent Events; each ``id`` is the event's seq.

    Reconnect with ``Last-Event-ID`` (or ``?after=SEQ``) to get only the events after it.
    """
    await service.check(run_id, caller)
    return sse_response(service.events(run_id, _after(last_event_id, after)))


def _after(header: str | None, query: int | None) -> int:
    if header is None or not header.strip():
        return query or 0
    text = header.strip()
    if not (text.isascii() and text.isdigit()) or int(text) > MAX_SEQ:
        raise UserError(f"Last-Event-ID must be an event seq (0 to {MAX_SEQ}), got {header!r}.")
    return int(text)


@router.get("/approvals", response_model=list[PendingItem], tags=["approvals"])
async def all_approvals(service: Svc, caller: Who) -> list[PendingItem]:
    """Every call and interrupt the caller's suspended runs wait for."""
    return await service.pending(caller)


@router.get("/runs/{run_id}/approvals", response_model=list[PendingItem], tags=["approvals"])
async def run_approvals(run_id: str, service: Svc, caller: Who) -> list[PendingItem]:
    """What one run waits for (empty unless it is ``awaiting_approval``)."""
    return (await service.view(run_id, caller)).pending


@decision_route(router, "approve")
async def approve(run_id: str, item_id: str, body: Decision, service: Svc, caller: Who) -> Accepted:
    """Approve a call (with ``result``: it already happened; record that instead)."""
    choice = ApprovalDecision(tool_call_id=item_id, granted=True, result=body.result)
    return await service.decide(run_id, item_id, choice, caller)


@decision_route(router, "deny")
async def deny(run_id: str, item_id: str, body: Decision, service: Svc, caller: Who) -> Accepted:
    """Deny a call (the model reads the reason) or a budget interrupt."""
    facts = await service.facts(run_id, caller)
    held = item_id in {i.id for i in facts.state.interrupts}
    choice = denial(item_id, body.reason, interrupt=held)
    return await service.decide(run_id, item_id, choice, caller)


@decision_route(router, "raise")
async def raise_budget(
    run_id: str, item_id: str, body: RaiseBudget, service: Svc, caller: Who
) -> Accepted:
    """Raise the limit a budget interrupt stopped at to ``max``, and retry."""
    facts = await service.facts(run_id, caller)
    item = next((i for i in pending_items(facts.state) if i.id == item_id), None)
    if item is None or item.limit is None:
        raise NotFound(f"Run {run_id} has no pending budget interrupt {item_id!r}.")
    return await service.decide(run_id, item_id, raised_limit(item, body.max), caller)
