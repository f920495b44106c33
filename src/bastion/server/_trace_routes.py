"""The trace routes: a run's (or a graph execution's) span tree, for the console's waterfall."""

from __future__ import annotations

from fastapi import APIRouter

from ._errors import error_responses
from ._graph_routes import Runs
from ._routes import Svc, Who
from ._trace import build_trace
from ._trace_models import Trace

__all__ = ["execution_trace_router", "trace_router"]

_ERRORS = error_responses(401, 404)
trace_router = APIRouter(responses=_ERRORS, tags=["runs"])
execution_trace_router = APIRouter(responses=_ERRORS, tags=["graphs"])


@trace_router.get("/runs/{run_id}/trace", response_model=Trace)
async def run_trace(run_id: str, service: Svc, caller: Who) -> Trace:
    """The run as a tree of timed spans: steps, model calls, tool calls, sub-agent runs.

    Built from the run's logged events and the times they were written; while the run goes
    on (``live``), fetch it again for the rest.
    """
    view = await service.view(run_id, caller)
    events = await service.manager.log.read_timed(run_id)
    return build_trace(run_id, "run", events, live=view.status == "running")


@execution_trace_router.get("/executions/{execution_id}/trace", response_model=Trace)
async def execution_trace(execution_id: str, runs: Runs, caller: Who) -> Trace:
    """The graph execution as a tree of timed spans: graphs, node runs, their agent runs."""
    await runs.check(execution_id, caller)
    events = await runs.log.read_timed(execution_id)
    record = await runs.stores.journal.get_run(execution_id)
    live = execution_id in runs.live or record is None or record.status == "running"
    return build_trace(execution_id, "execution", events, live=live)
