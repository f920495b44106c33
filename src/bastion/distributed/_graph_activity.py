"""The activity that runs one graph node's own code on a worker.

Function nodes and :class:`~bastion.graph.Node` subclasses run here, with a ``ctx`` of their
own: ``ctx.pause`` (and a raised ``NodeInterrupt``) ends the activity with a result that
says it paused and what the node showed (not a failure: nothing went wrong); the workflow
parks until a person answers, then runs the node again from its start with the answers so
far: each ``ctx.pause`` returns the next one at once (the local ``graph.resume`` semantics).
Any other exception fails the node, its type named.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING

import pydantic_core
from temporalio import activity
from temporalio.exceptions import ApplicationError

from bastion.governance import Governor
from bastion.graph import NodeContext, NodeInterrupt
from bastion.graph._execution import Execution
from bastion.graph._run import Run

from ._activities import _beating  # pyright: ignore[reportPrivateUsage]
from ._codec import encode_value

if TYPE_CHECKING:
    from bastion.graph import Graph
    from bastion.graph._nodes import NodeSpec

__all__ = ["PAUSED", "ActivityNodeContext", "NodeActivity", "node_activity"]

PAUSED = "paused"
"""The key of a paused node's result (``{"paused": payload, "reason": ...}``); else ``output``."""

NodeActivity = Callable[[str, str, str, str, str], Awaitable[str]]


class _Paused(Exception):
    def __init__(self, payload: object, reason: str) -> None:
        super().__init__(reason or "the node asks for a value")
        self.payload = payload
        self.reason = reason


class ActivityNodeContext(NodeContext):
    """The ``ctx`` of a node run in an activity: each ``pause`` returns the next answer."""

    __slots__ = ("_answers",)

    def __init__(
        self,
        execution: Execution,
        key: str,
        node_id: str,
        inputs: list[object],
        answers: list[object],
    ) -> None:
        super().__init__(execution, key, node_id, inputs)
        self._answers = answers

    async def pause(self, payload: object = None, *, reason: str = "") -> object:
        """The next answer given to this node; without one yet, the workflow parks for it."""
        return self.next_answer(payload, reason)

    def next_answer(self, payload: object, reason: str) -> object:
        """The next answer, in the order the node asked (raises when none is left)."""
        if not self._answers:
            raise _Paused(payload, reason)
        return self._answers.pop(0)


def node_activity(name: str, graphs: Mapping[str, Graph], heartbeat: float | None) -> NodeActivity:
    """The activity running node ``key`` of ``graphs[graph_key]`` on JSON ``inputs``."""

    @activity.defn(name=name)
    async def run_node(graph_key: str, key: str, node_id: str, inputs: str, answers: str) -> str:
        graph = graphs[graph_key]
        values: list[object] = pydantic_core.from_json(inputs)
        ctx = _context(graph, key, node_id, values, pydantic_core.from_json(answers))
        try:
            try:
                output = await _beating(_call(graph.specs[key], values, ctx), heartbeat)
            except NodeInterrupt as asked:  # the answer is the node's output
                output = ctx.next_answer(asked.payload, asked.reason)
        except _Paused as paused:
            return encode_value({PAUSED: paused.payload, "reason": paused.reason})
        except Exception as error:  # the node failed: its type and message go to the workflow
            raise ApplicationError(str(error), type=type(error).__name__) from error
        return encode_value({"output": output})

    return run_node


def _context(
    graph: Graph, key: str, node_id: str, inputs: list[object], answers: list[object]
) -> ActivityNodeContext:
    """A ``ctx`` on a one-node execution of its own, on the graph's governor."""
    governor = graph.governor if graph.governor is not None else Governor(clock=graph.clock)
    workflow_id = activity.info().workflow_id or "activity"
    run = Run(
        governor=governor,
        invocation_id=f"{graph.key}#{workflow_id}",
        sink=None,
        checkpointer=None,
        clock=graph.clock,
    )
    execution = Execution(run, graph, workflow_id.replace("#", "_"), None)
    return ActivityNodeContext(execution, key, node_id, inputs, answers)


async def _call(spec: NodeSpec, inputs: list[object], ctx: NodeContext) -> object:
    """The node's body, as the scheduler runs it (a function of its arity, or ``invoke``)."""
    fn = spec.fn
    if fn is None:
        assert spec.invoke is not None
        return (await spec.invoke(inputs, ctx))[1]
    arity = spec.arity
    output = fn(inputs) if arity == 1 else fn(inputs, ctx) if arity == 2 else fn()
    if inspect.isawaitable(output):  # an async function's coroutine
        output = await output
    return output
