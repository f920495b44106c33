"""Graphs: functions, nodes and agents as nodes of a DAG, a cyclic graph, or both.

Define a :class:`Graph` in Python (``add_node``, ``add_edge``, conditions, decorators) or
load one from a manifest through a :class:`Registry`; ``await graph.run(input)`` returns a
:class:`GraphResult` and ``graph.stream(input)`` yields typed signals. Every action of a
node goes through the governor (global → graph → node → oracle). See ``docs/graph.md``.
"""

from __future__ import annotations

from ._checkpoint import Checkpoint, Checkpointer, MemoryCheckpointer, Step
from ._context import NodeContext, NodeView, OracleCalls
from ._graph import Graph
from ._manifest import Registry
from ._mcp_serve import entry_type
from ._nodes import Layer, Node, NodeResult, Suspended
from ._result import Aborted, GraphResult, NodeInterrupt
from ._run import GraphStream
from ._signals import (
    AgentEventSignal,
    CustomSignal,
    GraphAfter,
    GraphBefore,
    GraphError,
    GraphSignal,
    GraphStatus,
    NodeAfter,
    NodeBefore,
    NodeError,
)
from ._store_checkpointer import StoreCheckpointer
from ._store_history import fork_execution, list_checkpoints, load_execution
from ._store_log import CheckpointConflict
from ._store_records import CheckpointRecord, ExecutionRecord, FinishedNode
from ._topology import Edge
from ._workflow import RetryPolicy, Workflow, WorkflowResult

__all__ = [
    "Aborted",
    "AgentEventSignal",
    "Checkpoint",
    "CheckpointConflict",
    "CheckpointRecord",
    "Checkpointer",
    "CustomSignal",
    "Edge",
    "ExecutionRecord",
    "FinishedNode",
    "Graph",
    "GraphAfter",
    "GraphBefore",
    "GraphError",
    "GraphResult",
    "GraphSignal",
    "GraphStatus",
    "GraphStream",
    "Layer",
    "MemoryCheckpointer",
    "Node",
    "NodeAfter",
    "NodeBefore",
    "NodeContext",
    "NodeError",
    "NodeInterrupt",
    "NodeResult",
    "NodeView",
    "OracleCalls",
    "Registry",
    "RetryPolicy",
    "Step",
    "StoreCheckpointer",
    "Suspended",
    "Workflow",
    "WorkflowResult",
    "entry_type",
    "fork_execution",
    "list_checkpoints",
    "load_execution",
]
