"""The workflow side of a graph's nodes: activities, child workflows and parked pauses.

:func:`workflow_graph` copies a graph for the workflow: the same keys, edges and settings,
on the workflow's clock, with each node's body swapped. A function or ``Node`` node runs as
the node activity; an agent node runs as the agent's own workflow, a child; a map node runs
each element as a child workflow of the mapped graph. A node that pauses parks the workflow
(:class:`NodeCalls` holds what waits) until the ``answer`` update gives its value.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass, replace
from datetime import timedelta
from typing import TYPE_CHECKING, cast

import pydantic_core
from pydantic import TypeAdapter
from temporalio import workflow
from temporalio.exceptions import (
    ActivityError,
    ApplicationError,
    CancelledError,
    ChildWorkflowError,
)

from bastion.core import RunFailed
from bastion.graph import Graph

from ._codec import encode_value
from ._graph_activity import PAUSED
from ._graph_views import PendingInput, graph_result_adapter
from ._proxies import WorkflowClock, _remote_error  # pyright: ignore[reportPrivateUsage]
from ._views import result_adapter

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from temporalio.common import RetryPolicy

    from bastion.agent import Agent
    from bastion.core import JsonObject
    from bastion.governance import Governor
    from bastion.graph import Layer, NodeContext
    from bastion.graph._nodes import NodeSpec

__all__ = ["GraphCalls", "NodeCalls", "workflow_graph"]


@dataclass(frozen=True, slots=True, kw_only=True)
class GraphCalls:
    """How a graph workflow calls its node activity and its children."""

    node: str
    task_queue: str
    timeout: timedelta
    heartbeat: timedelta | None
    retry: Mapping[str, RetryPolicy]
    """The retry policy of each node, by ``<graph key>.<node key>``."""


class NodeCalls:
    """The calls of one workflow run, and the nodes it parked (for ``answer`` and ``status``)."""

    def __init__(self, calls: GraphCalls) -> None:
        self.calls = calls
        self.pending: dict[str, PendingInput] = {}
        self.answers: dict[str, str] = {}
        self.children: dict[str, list[str]] = {}
        self.aborted = False  # the workflow was cancelled: its children end aborted

    async def node(self, graph_key: str, key: str, node_id: str, inputs: list[object]) -> object:
        """Run the node activity; its output.

        Each time the node pauses, the workflow parks for an answer, then runs the node
        again with every answer so far.
        """
        calls, answers = self.calls, list[object]()
        while True:
            try:
                text = await workflow.execute_activity(
                    calls.node,
                    args=[graph_key, key, node_id, encode_value(inputs), encode_value(answers)],
                    result_type=str,
                    start_to_close_timeout=calls.timeout,
                    heartbeat_timeout=calls.heartbeat,
                    retry_policy=calls.retry[f"{graph_key}.{key}"],
                    summary=node_id,
                )
            except ActivityError as error:
                raise _node_error(key, error) from None
            done: JsonObject = pydantic_core.from_json(text)
            if PAUSED not in done:
                return done["output"]
            answer = await self._park(node_id, key, done[PAUSED], str(done["reason"]))
            answers.append(pydantic_core.from_json(answer))

    async def _park(self, node_id: str, key: str, payload: object, reason: str) -> str:
        self.pending[node_id] = PendingInput(
            node_id=node_id, node=key, payload=payload, reason=reason
        )
        await workflow.wait_condition(lambda: node_id in self.answers)
        del self.pending[node_id]
        return self.answers.pop(node_id)

    async def agent(self, agent: Agent[object, object], prompt: str, node_id: str) -> object:
        """Run ``agent`` as its own workflow, a child of this one; its output."""
        child = f"{workflow.info().workflow_id}/{node_id}"
        self.children[node_id] = [child]
        try:
            text: str = await workflow.execute_child_workflow(
                f"bastion.agent.{agent.name}",
                prompt,
                id=child,
                task_queue=self.calls.task_queue,
                result_type=str,
            )
        except ChildWorkflowError as error:
            raise RunFailed(
                f"Agent {agent.name!r} workflow failed: {error.cause}", code="agent_failed"
            ) from None
        raw = result_adapter().validate_json(text)
        if raw.status == "aborted" and self.aborted:
            raise asyncio.CancelledError(f"Node {node_id!r} was cancelled.")
        if raw.status != "completed":
            why = raw.error.message if raw.error is not None else raw.status
            raise RunFailed(
                f"Agent {agent.name!r} did not complete ({raw.status}): {why}", code="agent_failed"
            )
        output: object = TypeAdapter(agent.config.output_type).validate_python(raw.output)
        return output

    async def map(
        self, graph: Graph, items: Sequence[object], max_concurrency: int, node_id: str
    ) -> list[object]:
        """Run ``graph`` once per item, each a child workflow; the outputs in order."""
        base = f"{workflow.info().workflow_id}/{node_id}"
        outputs: list[object] = [None] * len(items)
        self.children[node_id] = [f"{base}[{index}]" for index in range(len(items))]
        indexes = iter(range(len(items)))

        async def worker() -> None:
            for index in indexes:
                text: str = await workflow.execute_child_workflow(
                    f"bastion.graph.{graph.key}",
                    encode_value(items[index]),
                    id=f"{base}[{index}]",
                    task_queue=self.calls.task_queue,
                    result_type=str,
                )
                result = graph_result_adapter().validate_json(text)
                if result.status == "aborted" and self.aborted:
                    raise asyncio.CancelledError(f"Node {node_id!r} was cancelled.")
                if result.status != "completed":
                    raise RunFailed(
                        f"Map element {index} ({graph.key!r}) ended {result.status}: "
                        + "; ".join(f"{k}: {e}" for k, e in result.errors.items()),
                        code="map_element_failed",
                    )
                outputs[index] = result.output

        async with asyncio.TaskGroup() as group:
            for _ in range(min(len(items), max_concurrency)):
                group.create_task(worker())
        return outputs


class _Children:
    """What an agent or map node's body calls on ``ctx``: child workflows instead."""

    def __init__(self, calls: NodeCalls, node_id: str) -> None:
        self._calls = calls
        self._node_id = node_id

    async def run_agent(self, agent: Agent[object, object], prompt: str) -> object:
        return await self._calls.agent(agent, prompt, self._node_id)

    async def map(
        self, graph: Graph, items: Sequence[object], *, max_concurrency: int = 8
    ) -> list[object]:
        return await self._calls.map(graph, items, max_concurrency, self._node_id)


def workflow_graph(graph: Graph, calls: NodeCalls, governor: Governor) -> Graph:
    """``graph`` as its workflow runs it: its nodes are activities and child workflows."""
    twin = Graph(
        graph.key,
        governor=governor,
        policies=graph.policies,
        entry=graph.entry or None,
        output=graph.output,
        max_concurrency=graph.max_concurrency,
        max_rounds=graph.max_rounds,
        clock=WorkflowClock(),
    )
    twin.specs = {k: _swap(graph.key, s, calls) for k, s in graph.specs.items()}
    twin.edges = list(graph.edges)
    return twin


def _swap(graph_key: str, spec: NodeSpec, calls: NodeCalls) -> NodeSpec:
    if spec.kind in {"agent", "map"}:  # their bodies only call ctx.run_agent / ctx.map
        body = spec.invoke
        assert body is not None

        async def children(
            inputs: list[object], ctx: NodeContext
        ) -> tuple[tuple[Layer, ...], object]:
            return await body(inputs, cast("NodeContext", _Children(calls, _path(ctx))))

        return replace(spec, fn=None, invoke=children)
    key = spec.key

    async def activity(inputs: list[object], ctx: NodeContext) -> tuple[tuple[Layer, ...], object]:
        return (), await calls.node(graph_key, key, _path(ctx), inputs)

    return replace(spec, fn=None, invoke=activity)


def _path(ctx: NodeContext) -> str:
    """``<key>@<round>``: the node's run, unique in one workflow."""
    return f"{ctx.key}@{ctx.round}"


def _node_error(key: str, error: ActivityError) -> BaseException:
    """What the node raises for its failed activity; a cancelled one is the node cancelled.

    The workflow cancels a node's activity only when the execution is aborted: the node
    then ends as a cancelled task does locally, not as a failure the graph goes on after.
    """
    cause = error.cause
    if isinstance(cause, CancelledError):
        return asyncio.CancelledError(f"Node {key!r} was cancelled.")
    if isinstance(cause, ApplicationError):
        return _remote_error(cause.type or "Exception")(cause.message)
    return RunFailed(f"Node {key!r} did not finish: {cause or error}.", code="node_lost")
