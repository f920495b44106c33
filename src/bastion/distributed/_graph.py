"""``TemporalGraph``: a graph whose executions are Temporal workflows, and their worker."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import timedelta
from typing import TYPE_CHECKING, Any, cast

from pydantic_core import PydanticSerializationError
from temporalio.client import WorkflowExecutionStatus, WorkflowUpdateFailedError
from temporalio.common import RetryPolicy
from temporalio.service import RPCError
from temporalio.worker import Worker

from bastion.core import UserError
from bastion.graph import Graph
from bastion.graph import RetryPolicy as NodeRetry

from ._agent import TemporalAgent
from ._codec import encode_value
from ._graph_activity import node_activity
from ._graph_calls import GraphCalls
from ._graph_views import (
    GraphWorkflowResult,
    GraphWorkflowStatus,
    graph_result_adapter,
    graph_status_adapter,
)
from ._graph_workflow import graph_workflow
from ._reach import by_name
from ._shared import cancel_workflow, start_run

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import Agent

    from ._activities import ActivityFunction

__all__ = ["TemporalGraph"]


class TemporalGraph:
    """Runs a :class:`~bastion.graph.Graph` as a durable Temporal workflow.

    The scheduler runs as workflow code. A function node (or ``Node`` subclass) runs as an
    activity any worker may run, tried again as its retry policy says; an agent node runs
    as the agent's own workflow (as :class:`TemporalAgent` runs it), a child workflow; a
    map node runs each element as a child workflow of the mapped graph. A node that calls
    ``ctx.pause`` parks the workflow until :meth:`answer` gives it a value. Build one at
    import time of a module both the client and the workers import.

    Args:
        graph: The graph (its key names the workflow, ``bastion.graph.<key>``).
        task_queue: The queue the workers poll (default ``bastion.graph.<key>``).
        activity_timeout: Seconds one node activity (or model or tool call) may take.
        heartbeat_timeout: Seconds without a heartbeat after which a node's worker is
            taken for lost (``None``: only ``activity_timeout`` tells).
        retry: How often a failing node runs, by default (default: 3 tries, 1 s apart,
            then doubling).
        retries: The retry policy of particular nodes, by node key.

    Raises:
        UserError: An invalid graph or setting, two different graphs or agents under one
            name, a retry policy for no node, or an agent that cannot run on Temporal.
    """

    def __init__(
        self,
        graph: Graph,
        *,
        task_queue: str | None = None,
        activity_timeout: float = 300.0,
        heartbeat_timeout: float | None = None,
        retry: NodeRetry | None = None,
        retries: Mapping[str, NodeRetry] | None = None,
    ) -> None:
        if not isinstance(graph, Graph):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"TemporalGraph needs a Graph, got {type(graph).__name__}.")
        graph.compile()
        if activity_timeout <= 0:
            raise UserError(f"activity_timeout must be > 0 seconds, got {activity_timeout!r}.")
        if heartbeat_timeout is not None and heartbeat_timeout <= 0:
            raise UserError(f"heartbeat_timeout must be > 0 seconds, got {heartbeat_timeout!r}.")
        self.graph = graph
        self.workflow_name = f"bastion.graph.{graph.key}"
        self.task_queue = task_queue or self.workflow_name
        graphs = _graphs(graph)
        agents = [
            TemporalAgent(
                a,
                task_queue=self.task_queue,
                activity_timeout=activity_timeout,
                heartbeat_timeout=heartbeat_timeout,
            )
            for a in _agents(graphs)
        ]
        calls = GraphCalls(
            node=f"{self.workflow_name}.node",
            task_queue=self.task_queue,
            timeout=timedelta(seconds=activity_timeout),
            heartbeat=None if heartbeat_timeout is None else timedelta(seconds=heartbeat_timeout),
            retry=_policies(graphs, retry or NodeRetry(backoff=1.0), dict(retries or {})),
        )
        beat = None if heartbeat_timeout is None else heartbeat_timeout / 3
        self.workflows: list[type] = [graph_workflow(g, calls) for g in graphs.values()]
        """The workflow classes: the graph's, its mapped graphs', its agents'."""
        self.workflows.extend(a.workflow for a in agents)
        self.activities: list[ActivityFunction] = [node_activity(calls.node, graphs, beat)]
        """The activity functions (register them with the workflows)."""
        for a in agents:
            self.activities.extend(a.activities)

    def worker(self, client: Client, **options: Any) -> Worker:
        """A worker for the graph's workflows and activities (``options`` go to ``Worker``)."""
        return Worker(
            client,
            task_queue=self.task_queue,
            workflows=self.workflows,
            activities=self.activities,
            **options,
        )

    async def start(
        self, client: Client, input: object = None, *, workflow_id: str | None = None
    ) -> WorkflowHandle[object, str]:
        """Start an execution of the graph on ``input`` (plain JSON data); its handle.

        Raises:
            UserError: ``input`` cannot be sent as JSON.
        """
        try:
            text = encode_value(input)
        except PydanticSerializationError as error:
            raise UserError(f"TemporalGraph input must be JSON data: {error}") from None
        return await start_run(
            client,
            self.workflow_name,
            text,
            workflow_id=workflow_id,
            id_prefix=self.graph.key,
            task_queue=self.task_queue,
        )

    async def run(
        self, client: Client, input: object = None, *, workflow_id: str | None = None
    ) -> GraphWorkflowResult:
        """Start an execution and wait for its end (through any pauses answered meanwhile)."""
        handle = await self.start(client, input, workflow_id=workflow_id)
        return await self.result(client, handle.id)

    async def result(self, client: Client, workflow_id: str) -> GraphWorkflowResult:
        """Wait for the end of the execution ``workflow_id``."""
        text = await _ask(client, workflow_id, "result")
        return graph_result_adapter().validate_json(text)

    async def status(self, client: Client, workflow_id: str) -> GraphWorkflowStatus:
        """What the execution ``workflow_id`` is doing: its node states, paused nodes."""
        return graph_status_adapter().validate_json(await _ask(client, workflow_id, "status"))

    async def settle(self, client: Client, workflow_id: str) -> GraphWorkflowStatus:
        """Wait until a node of ``workflow_id`` waits for an answer, or it ends; its status."""
        return graph_status_adapter().validate_json(await _ask(client, workflow_id, "settle"))

    async def cancel(self, client: Client, workflow_id: str) -> None:
        """Cancel the execution ``workflow_id``: it ends ``aborted``, as a local ``abort()``.

        Its running nodes stop (a node's activity at its next heartbeat, an agent node's
        workflow aborted, a map's element workflows cancelled), a paused node's wait ends,
        no further node starts, and the workflow completes with the aborted result.

        Raises:
            UserError: No workflow has the id ``workflow_id``.
        """
        await cancel_workflow(client, workflow_id)

    async def answer(
        self, client: Client, workflow_id: str, node_id: str, value: object = None
    ) -> list[str]:
        """Answer the paused node ``node_id`` (``<key>@<round>``); the nodes still waiting.

        The node runs again from its start, and its ``ctx.pause`` returns ``value``.

        Raises:
            UserError: ``value`` is not JSON data, or the workflow refused the answer (no
                such node waits, or it was answered already).
        """
        try:
            text = encode_value(value)
        except PydanticSerializationError as error:
            raise UserError(f"An answer must be JSON data: {error}") from None
        handle = client.get_workflow_handle(workflow_id)
        try:
            waiting: list[str] = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                "answer", args=[node_id, text], result_type=list[str]
            )
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            raise UserError(str(getattr(cause, "message", cause))) from None
        return waiting


async def _ask(client: Client, workflow_id: str, what: str) -> str:
    """The workflow's result, its ``status`` query or its ``settle`` update, as JSON text."""
    handle = client.get_workflow_handle(workflow_id, result_type=str)
    if what == "result":
        return await handle.result()
    if what == "settle":
        try:
            return await handle.execute_update(what, result_type=str)  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
        except RPCError:  # no update reaches a closed workflow: it has settled, read it
            described = await handle.describe()
            if described.status == WorkflowExecutionStatus.RUNNING:
                raise
    return await handle.query("status", result_type=str)


def _graphs(graph: Graph) -> dict[str, Graph]:
    """The graph and the graphs its map nodes run (at any depth), by key."""
    return by_name([graph], lambda g: g.key, _mapped, _graph_clash)


def _mapped(graph: Graph) -> list[Graph]:
    """The graphs ``graph``'s map nodes run (compiled first: that checks its nodes)."""
    graph.compile()
    return [s.target for s in graph.specs.values() if isinstance(s.target, Graph)]


def _graph_clash(graph: Graph) -> UserError:
    return UserError(
        f"Two different graphs are named {graph.key!r}: a workflow is named "
        "after its graph, so give each graph its own key."
    )


def _agents(graphs: Mapping[str, Graph]) -> list[Agent[object, object]]:
    """The agents of the graphs' agent nodes, once each."""
    found: dict[str, Agent[object, object]] = {}
    for graph in graphs.values():
        for spec in graph.specs.values():
            if spec.kind != "agent":
                continue
            agent = cast("Agent[Any, Any]", spec.target)  # an agent node's target is its agent
            known = found.setdefault(agent.name, agent)
            if known is not spec.target:
                raise UserError(
                    f"Two different agents are named {known.name!r} in graph {graph.key!r}: "
                    "an agent's workflow is named after it, so give each its own name."
                )
    return list(found.values())


def _policies(
    graphs: Mapping[str, Graph], default: NodeRetry, retries: dict[str, NodeRetry]
) -> dict[str, RetryPolicy]:
    """The activity retry policy of every node, by ``<graph key>.<node key>``."""
    keys = {k for g in graphs.values() for k in g.specs}
    unknown = sorted(set(retries) - keys)
    if unknown:
        raise UserError(
            f"retries names no node: {', '.join(map(repr, unknown))}; nodes: "
            f"{', '.join(map(repr, sorted(keys)))}."
        )
    return {
        f"{g.key}.{k}": _temporal(retries.get(k, default)) for g in graphs.values() for k in g.specs
    }


def _temporal(retry: NodeRetry) -> RetryPolicy:
    """A node's retry policy as Temporal's (a wait of 0 becomes 1 ms, Temporal's least)."""
    return RetryPolicy(
        initial_interval=timedelta(seconds=max(retry.backoff, 0.001)),
        backoff_coefficient=retry.multiplier,
        maximum_attempts=retry.max_attempts,
    )
