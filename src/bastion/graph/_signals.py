"""Typed signals of a graph execution: graph and node lifecycles, custom ``x:`` signals.

The execution emits these on ``Graph.stream``; the governor's own signals
(``oracle.exec.in`` …, :mod:`bastion.governance`) join the same stream. Every signal carries
the node key, invocation id, graph id, node id and ancestry of where it happened.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Literal, TypeAlias, TypedDict

from bastion.core import AgentEvent
from bastion.governance import GovernanceSignal

__all__ = [
    "AgentEventSignal",
    "CustomSignal",
    "GraphAfter",
    "GraphBefore",
    "GraphError",
    "GraphSignal",
    "GraphStatus",
    "GraphWhere",
    "NodeAfter",
    "NodeBefore",
    "NodeError",
    "NodeErrorKind",
    "NodeWhere",
]

GraphStatus: TypeAlias = Literal["completed", "failed", "aborted", "suspended"]
NodeErrorKind: TypeAlias = Literal["error", "aborted", "denied", "suspended"]


def _no_data() -> dict[str, object]:
    return {}


class GraphWhere(TypedDict):
    """Where a signal of a graph execution happened (the fields of every signal)."""

    invocation_id: str
    graph_id: str
    ancestry: tuple[str, ...]


class NodeWhere(GraphWhere):
    """Where a signal of a running node happened: the execution's fields and the node's."""

    node_key: str
    node_id: str


@dataclass(frozen=True, kw_only=True, slots=True)
class _Where:
    node_key: str = ""
    invocation_id: str
    graph_id: str
    node_id: str = ""
    ancestry: tuple[str, ...] = ()


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphBefore(_Where):
    """A graph execution starts (``key`` names the graph)."""

    key: str
    input: object = None
    type: Literal["graph.before"] = "graph.before"


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphError(_Where):
    """A graph execution failed or was aborted; ``graph.after`` follows."""

    key: str
    error: str
    type: Literal["graph.error"] = "graph.error"


@dataclass(frozen=True, kw_only=True, slots=True)
class GraphAfter(_Where):
    """A graph execution ended, exactly once per ``graph.before`` whatever happened."""

    key: str
    status: GraphStatus
    output: object = None
    rounds: int = 1
    type: Literal["graph.after"] = "graph.after"


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeBefore(_Where):
    """A node starts, with the outputs of its predecessors (``inputs``)."""

    round: int
    inputs: tuple[object, ...] = ()
    type: Literal["node.before"] = "node.before"


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeAfter(_Where):
    """A node finished with ``output``."""

    round: int
    output: object = None
    type: Literal["node.after"] = "node.after"


@dataclass(frozen=True, kw_only=True, slots=True)
class NodeError(_Where):
    """A node failed (``kind``: ``error``, ``aborted``, ``denied`` or ``suspended``)."""

    round: int
    error: str
    kind: NodeErrorKind = "error"
    exception: BaseException | None = field(default=None, repr=False, compare=False)
    type: Literal["node.error"] = "node.error"


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentEventSignal(_Where):
    """An event of the agent run an agent node (or ``ctx.oracle.llm``) is making."""

    event: AgentEvent
    type: Literal["node.agent"] = "node.agent"


@dataclass(frozen=True, kw_only=True, slots=True)
class CustomSignal(_Where):
    """A consumer signal, ``ctx.emit("x:<name>", data)``."""

    name: str
    data: Mapping[str, object] = field(default_factory=_no_data)
    type: Literal["x"] = "x"


GraphSignal: TypeAlias = (
    GraphBefore
    | GraphAfter
    | GraphError
    | NodeBefore
    | NodeAfter
    | NodeError
    | AgentEventSignal
    | CustomSignal
    | GovernanceSignal
)
