"""Agents and graphs on an existing distributed engine (Temporal); needs ``bastion[temporal]``.

Nothing else in Bastion imports this package.
"""

from ._agent import TemporalAgent
from ._graph import TemporalGraph
from ._graph_views import (
    GraphWorkflowResult,
    GraphWorkflowStatus,
    GraphWorkflowStatusName,
    NodeStateName,
    PendingInput,
)
from ._proxies import WorkflowClock
from ._session import TemporalSession
from ._session_views import SessionStatusName, SessionView
from ._views import WorkflowInterrupt, WorkflowResult, WorkflowStatus, WorkflowStatusName

__all__ = [
    "GraphWorkflowResult",
    "GraphWorkflowStatus",
    "GraphWorkflowStatusName",
    "NodeStateName",
    "PendingInput",
    "SessionStatusName",
    "SessionView",
    "TemporalAgent",
    "TemporalGraph",
    "TemporalSession",
    "WorkflowClock",
    "WorkflowInterrupt",
    "WorkflowResult",
    "WorkflowStatus",
    "WorkflowStatusName",
]
