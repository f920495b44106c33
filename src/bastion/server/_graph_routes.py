"""The HTTP routes of graphs: executions, their signals, resume, history and forks."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Header, Query, Request
from fastapi.responses import StreamingResponse
from pydantic import BaseModel, ConfigDict, Field, JsonValue

from bastion.core import RunStatus
from bastion.stores import MAX_SEQ
from bastion.tools import ApprovalDecision, Directive, InterruptResolution

from ._errors import error_responses
from ._follow import sse
from ._graphs import GraphRuns
from ._models import ResumeRun
from ._routes import Who, _after  # pyright: ignore[reportPrivateUsage]

__all__ = ["graphs_router"]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class GraphInfo(_Body):
    """A served graph: its key, nodes, edges and Mermaid diagram."""

    key: str
    nodes: list[str]
    entries: list[str]
    edges: list[tuple[str, str]] = Field(description="Each edge as [source, target].")
    mermaid: str


class StartExecution(_Body):
    """Start an execution of a graph (its entries receive ``[input]``)."""

    input: JsonValue = Field(default=None, description="The graph's input (any JSON value).")


class ExecutionAccepted(_Body):
    """An execution that started (or resumed): where to follow it."""

    execution_id: str
    graph: str
    events: str


class ExecutionView(_Body):
    """A graph execution as its journal tells it."""

    execution_id: str
    graph: str
    status: RunStatus
    tenant_id: str | None
    input: object = None
    output: object = None
    error: str | None = None
    version: int
    finished: dict[str, object] = Field(
        description="Each finished node run's output, by resume key."
    )
    pending: list[dict[str, object]] = Field(description="What a suspended execution waits for.")
    forked_from: tuple[str, int] | None = None


class ExecutionSummary(_Body):
    """One execution in a list."""

    execution_id: str
    graph: str
    status: RunStatus
    created_at: datetime
    updated_at: datetime


class CheckpointView(_Body):
    """One checkpoint of an execution (per finished node and per round)."""

    version: int
    kind: str
    step: int
    finished: list[str]
    nodes: list[str]
    frontier: list[str]


class ForkExecution(_Body):
    """Fork an execution at a checkpoint, with edited node outputs; the fork runs at once."""

    version: int | None = Field(
        default=None, ge=0, le=MAX_SEQ, description="The checkpoint (default: latest)."
    )
    edits: dict[str, JsonValue] = Field(
        default_factory=dict[str, JsonValue], description="Node → output."
    )


def _runs(request: Request) -> GraphRuns:
    runs: GraphRuns = request.app.state.bastion_graphs
    return runs


Runs = Annotated[GraphRuns, Depends(_runs)]

_ERRORS = error_responses(400, 401, 404, 409, 413, 422, 503)
graphs_router = APIRouter(responses=_ERRORS, tags=["graphs"])


def _accepted(execution_id: str, graph: str) -> ExecutionAccepted:
    return ExecutionAccepted(
        execution_id=execution_id, graph=graph, events=f"/executions/{execution_id}/events"
    )


@graphs_router.get("/graphs", response_model=list[GraphInfo])
async def list_graphs(runs: Runs, caller: Who) -> list[GraphInfo]:
    """The served graphs, with their Mermaid diagrams."""
    return [
        GraphInfo(
            key=key,
            nodes=list(graph.specs),
            entries=list(graph.compile().entries),
            edges=[(edge.source, edge.target) for edge in graph.edges],
            mermaid=graph.to_mermaid(),
        )
        for key, graph in sorted(runs.graphs.items())
    ]


@graphs_router.post("/graphs/{graph}/executions", status_code=202, response_model=ExecutionAccepted)
async def start_execution(
    graph: str, body: StartExecution, runs: Runs, caller: Who
) -> ExecutionAccepted:
    """Start an execution; follow its signals at ``/executions/{execution_id}/events``."""
    return _accepted(await runs.start(caller, graph, body.input), graph)


@graphs_router.get("/graphs/{graph}/executions", response_model=list[ExecutionSummary])
async def list_executions(
    *,
    graph: str,
    runs: Runs,
    caller: Who,
    status: RunStatus | None = None,
    limit: Annotated[int, Query(ge=1, le=500)] = 50,
) -> list[ExecutionSummary]:
    """The graph's executions the caller sees, newest first."""
    runs.graph(graph)
    found: list[ExecutionSummary] = []
    page = await runs.stores.journal.list_runs(status=status, agent=f"graph:{graph}", limit=500)
    for record in page.runs:
        owner = await runs.owner(record.run_id)
        if owner is None or not caller.sees(owner.tenant):
            continue
        found.append(
            ExecutionSummary(
                execution_id=record.run_id,
                graph=graph,
                status=record.status,
                created_at=record.created_at,
                updated_at=record.updated_at,
            )
        )
        if len(found) == limit:
            break
    return found


@graphs_router.get("/executions/{execution_id}", response_model=ExecutionView)
async def get_execution(execution_id: str, runs: Runs, caller: Who) -> ExecutionView:
    """One execution: status, output or error, finished nodes, what it waits for."""
    record = await runs.record(execution_id, caller)
    owner = await runs.check(execution_id, caller)
    return ExecutionView(
        execution_id=execution_id, graph=record.graph, status=record.status,
        tenant_id=owner.tenant, input=record.input, output=record.output,
        error=record.error, version=record.version,
        finished={key: node.output for key, node in record.finished.items()},
        pending=[dict[str, object](item) for item in record.pending],
        forked_from=record.forked_from,
    )  # fmt: skip


@graphs_router.get(
    "/executions/{execution_id}/events",
    response_class=StreamingResponse,
    responses={200: {"content": {"text/event-stream": {}}}},
)
async def execution_events(
    execution_id: str,
    runs: Runs,
    caller: Who,
    last_event_id: Annotated[str | None, Header()] = None,
    after: Annotated[int | None, Query(ge=0, le=MAX_SEQ)] = None,
) -> StreamingResponse:
    """The execution's signals as Server-Sent Events; each ``id`` is the signal's seq.

    Reconnect with ``Last-Event-ID`` (or ``?after=SEQ``) to get only the signals after it.
    """
    await runs.check(execution_id, caller)
    start = _after(last_event_id, after)

    async def body() -> AsyncIterator[bytes]:
        async for event in runs.events(execution_id, start):
            yield sse(event)

    headers = {"Cache-Control": "no-cache", "X-Accel-Buffering": "no"}
    return StreamingResponse(body(), media_type="text/event-stream", headers=headers)


@graphs_router.post(
    "/executions/{execution_id}/resume", status_code=202, response_model=ExecutionAccepted
)
async def resume_execution(
    execution_id: str, body: ResumeRun, runs: Runs, caller: Who
) -> ExecutionAccepted:
    """Resume a suspended (or interrupted) execution with the decisions it waits for."""
    directive = Directive(
        approvals=[ApprovalDecision(**a.model_dump()) for a in body.approvals],
        interrupts=[InterruptResolution(**i.model_dump()) for i in body.interrupts],
    )
    await runs.resume(execution_id, directive, caller)
    return _accepted(execution_id, (await runs.check(execution_id, caller)).graph)


@graphs_router.get("/executions/{execution_id}/history", response_model=list[CheckpointView])
async def execution_history(execution_id: str, runs: Runs, caller: Who) -> list[CheckpointView]:
    """The execution's checkpoints, oldest first."""
    record = await runs.record(execution_id, caller)
    return [
        CheckpointView(
            version=c.version,
            kind=c.kind,
            step=c.step,
            finished=list(c.finished),
            nodes=list(c.nodes),
            frontier=list(c.frontier),
        )
        for c in record.checkpoints
    ]


@graphs_router.post(
    "/executions/{execution_id}/fork", status_code=202, response_model=ExecutionAccepted
)
async def fork_execution(
    execution_id: str, body: ForkExecution, runs: Runs, caller: Who
) -> ExecutionAccepted:
    """Fork the execution at a checkpoint with edited outputs, and run the fork."""
    forked = await runs.fork(execution_id, body.version, body.edits, caller)
    return _accepted(forked, (await runs.check(forked, caller)).graph)
