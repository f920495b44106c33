"""What a client reads of a graph workflow: its result and its status, as JSON text."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Literal, TypeAlias

from pydantic import TypeAdapter

__all__ = [
    "GraphWorkflowResult",
    "GraphWorkflowStatus",
    "GraphWorkflowStatusName",
    "NodeStateName",
    "PendingInput",
    "graph_result_adapter",
    "graph_status_adapter",
]

GraphWorkflowStatusName: TypeAlias = Literal[
    "running", "paused", "completed", "failed", "suspended", "aborted"
]
NodeStateName: TypeAlias = Literal["running", "paused", "finished", "failed", "suspended"]


@dataclass(kw_only=True, slots=True, frozen=True)
class GraphWorkflowResult:
    """How a graph workflow ended.

    Attributes:
        workflow_id: The workflow's id.
        graph: The graph's key.
        status: ``completed``, ``failed``, ``suspended`` or ``aborted``.
        output: The graph's output, as plain JSON.
        outputs: Every node's last output, by node key, in finishing order.
        errors: ``"<type>: <message>"`` of each failed node, by node key.
        rounds: How many rounds ran.
        stopped: Nodes whose next round a policy or ``max_rounds`` refused.
    """

    workflow_id: str
    graph: str
    status: Literal["completed", "failed", "suspended", "aborted"]
    output: object = None
    outputs: dict[str, object] = field(default_factory=dict[str, object])
    errors: dict[str, str] = field(default_factory=dict[str, str])
    rounds: int = 0
    stopped: list[str] = field(default_factory=list[str])

    @property
    def ok(self) -> bool:
        """True when the graph completed."""
        return self.status == "completed"


@dataclass(kw_only=True, slots=True, frozen=True)
class PendingInput:
    """A node parked on ``ctx.pause`` (or a raised ``NodeInterrupt``), waiting for a value.

    Attributes:
        node_id: The node's run, ``<key>@<round>``: what ``TemporalGraph.answer`` names.
        node: The node's key.
        payload: What the node showed (``ctx.pause(payload)``), as plain JSON.
        reason: Why it asks.
    """

    node_id: str
    node: str
    payload: object = None
    reason: str = ""


@dataclass(kw_only=True, slots=True, frozen=True)
class GraphWorkflowStatus:
    """What a graph workflow is doing now (its ``status`` query).

    Attributes:
        status: ``running``, ``paused`` (a node waits for an answer), or how it ended.
        nodes: The state of each node run so far, by ``<key>@<round>``, in start order.
        pending: The nodes waiting for an answer.
        children: The child workflows each agent or map node started, by node run: where
            an agent's approvals, or a pause inside a mapped element, are decided.
    """

    status: GraphWorkflowStatusName
    nodes: dict[str, NodeStateName] = field(default_factory=dict[str, NodeStateName])
    pending: list[PendingInput] = field(default_factory=list[PendingInput])
    children: dict[str, list[str]] = field(default_factory=dict[str, list[str]])


@cache
def graph_result_adapter() -> TypeAdapter[GraphWorkflowResult]:
    """The adapter of a graph workflow's result."""
    return TypeAdapter(GraphWorkflowResult)


@cache
def graph_status_adapter() -> TypeAdapter[GraphWorkflowStatus]:
    """The adapter of a graph workflow's status query."""
    return TypeAdapter(GraphWorkflowStatus)
