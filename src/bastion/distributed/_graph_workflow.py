"""A graph's workflow: the unchanged graph scheduler, run as Temporal workflow code.

The workflow history is the execution's checkpoint: a replayed workflow re-runs the
scheduler, and every node activity and child workflow it reaches is answered from the
history instead of running again, so no checkpointer is used (no I/O in workflow code).
The scheduler gets the workflow's clock and ids and a governor of its own; the ``status``
query reads the node states its signals report, the ``answer`` update wakes a paused node.
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

import pydantic_core
from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.exceptions import ApplicationError

from bastion.core import id_source
from bastion.governance import Governor
from bastion.graph import NodeAfter, NodeBefore, NodeError

from ._graph_calls import GraphCalls, NodeCalls, workflow_graph
from ._graph_views import (
    GraphWorkflowResult,
    GraphWorkflowStatus,
    GraphWorkflowStatusName,
    NodeStateName,
    graph_result_adapter,
    graph_status_adapter,
)
from ._proxies import WorkflowClock
from ._shared import cancel_as_abort, workflow_class

if TYPE_CHECKING:
    from bastion.graph import Graph, GraphResult, GraphSignal
    from bastion.graph._run import Run

__all__ = ["GraphWorkflow", "graph_workflow"]


class GraphWorkflow:
    """The workflow of one graph; :func:`graph_workflow` makes one subclass per graph."""

    graph: Graph
    calls: GraphCalls

    def __init__(self) -> None:
        self._calls = NodeCalls(self.calls)
        self._nodes: dict[str, NodeStateName] = {}
        self._ended: GraphWorkflowStatusName | None = None
        self._root = ""
        self._run: Run | None = None
        self._aborted = False

    async def execute(self, input_text: str) -> str:
        """Run the graph to its end; a cancellation of the workflow aborts the execution.

        The execution works in a task of its own that Temporal's cancellation never
        reaches: the cancellation becomes the execution's own abort (running nodes stop,
        ``graph.after`` still comes), so it ends ``aborted`` and the workflow completes.
        """
        return await cancel_as_abort(self._execute(input_text), self._cancelled)

    def _cancelled(self) -> None:
        """The workflow was cancelled: abort the execution (and what it starts next)."""
        self._aborted = self._calls.aborted = True
        if self._run is not None:
            self._run.abort("cancelled")

    async def _execute(self, input_text: str) -> str:
        """Run the graph on ``input_text`` (JSON) to its end; its result, as JSON."""
        info = workflow.info()
        governor = Governor(clock=WorkflowClock())
        graph = workflow_graph(self.graph, self._calls, governor)
        execution_id = info.workflow_id.replace("#", "_").replace("|", "_")
        self._root = f"{graph.key}#{execution_id}"
        with id_source(lambda: workflow.uuid4().hex):
            # The execution with a sink, as ``stream`` makes it, minus its async generator:
            # a workflow evicted from a worker's cache closes its coroutines, and a
            # generator's cleanup would then await in a closing coroutine.
            run, execution = graph._start(  # pyright: ignore[reportPrivateUsage]
                pydantic_core.from_json(input_text),
                self._track,
                execution_id=execution_id,
                governor=governor,
                checkpointer=None,
            )
            run.main, self._run = asyncio.current_task(), run  # what an abort cancels
            if self._aborted:
                run.abort("cancelled")
            result = await execution.execute()
        self._ended = result.status
        await workflow.wait_condition(workflow.all_handlers_finished)
        return _encode(info.workflow_id, result)

    def _track(self, signal: GraphSignal) -> None:
        if signal.graph_id != self._root:
            return
        if isinstance(signal, NodeBefore):
            self._nodes[f"{signal.node_key}@{signal.round}"] = "running"
        elif isinstance(signal, NodeAfter):
            self._nodes[f"{signal.node_key}@{signal.round}"] = "finished"
        elif isinstance(signal, NodeError):
            state = "suspended" if signal.kind == "suspended" else "failed"
            self._nodes[f"{signal.node_key}@{signal.round}"] = state

    def _waiting(self) -> list[str]:
        calls = self._calls
        return [node for node in calls.pending if node not in calls.answers]

    @workflow.update
    async def answer(self, node_id: str, value: str) -> list[str]:
        """Give a paused node its value (JSON); returns the nodes still waiting."""
        self._calls.answers[node_id] = value
        return self._waiting()

    @answer.validator
    def check(self, node_id: str, value: str) -> None:
        """Refuse an answer to a node that is not waiting, or that is not JSON."""
        if node_id not in self._waiting():
            waiting = ", ".join(self._waiting()) or "none"
            raise ApplicationError(f"No node {node_id!r} is waiting for an answer ({waiting}).")
        try:
            pydantic_core.from_json(value)
        except ValueError as error:
            raise ApplicationError(f"The answer to {node_id!r} is not JSON: {error}") from None

    @workflow.update
    async def settle(self) -> str:
        """Wait until a node waits for an answer or the graph ends; its status, as JSON."""
        await workflow.wait_condition(lambda: self._ended is not None or bool(self._waiting()))
        return self.status()

    @workflow.query
    def status(self) -> str:
        """Status, node states and the nodes waiting for an answer, as JSON."""
        waiting = self._waiting()
        nodes = dict(self._nodes)
        for node in waiting:
            nodes[node] = "paused"
        status: GraphWorkflowStatusName = self._ended or ("paused" if waiting else "running")
        calls = self._calls
        view = GraphWorkflowStatus(
            status=status,
            nodes=nodes,
            pending=[calls.pending[n] for n in waiting],
            children={k: list(v) for k, v in calls.children.items()},
        )
        return graph_status_adapter().dump_json(view).decode()


async def _run(self: GraphWorkflow, input_text: str) -> str:
    """The run method every graph's workflow class shares."""
    return await self.execute(input_text)


def graph_workflow(graph: Graph, calls: GraphCalls) -> type:
    """The workflow class that runs ``graph``, registered as ``bastion.graph.<key>``.

    As the agent workflow: a run method made from the module-level :func:`_run` (Temporal
    wants it defined on the class), unsandboxed (the scheduler is deterministic once its
    clock, ids and node bodies are the workflow's).
    """
    return workflow_class(
        GraphWorkflow,
        _run,
        f"GraphWorkflow[{graph.key}]",
        f"bastion.graph.{graph.key}",
        {"graph": graph, "calls": calls},
    )


def _encode(workflow_id: str, result: GraphResult) -> str:
    view = GraphWorkflowResult(
        workflow_id=workflow_id,
        graph=result.graph,
        status=result.status,
        output=to_jsonable_python(result.output),
        outputs=to_jsonable_python(dict(result.outputs)),
        errors={k: f"{type(e).__name__}: {e}" for k, e in result.errors.items()},
        rounds=result.rounds,
        stopped=list(result.stopped),
    )
    return graph_result_adapter().dump_json(view).decode()
