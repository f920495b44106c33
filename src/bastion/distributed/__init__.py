"""Running agents on an existing distributed engine (Temporal); needs ``bastion[temporal]``.

Nothing else in Bastion imports this package.
"""

from ._agent import TemporalAgent
from ._proxies import WorkflowClock
from ._session import TemporalSession
from ._session_views import SessionStatusName, SessionView
from ._views import WorkflowResult, WorkflowStatus, WorkflowStatusName

__all__ = [
    "SessionStatusName",
    "SessionView",
    "TemporalAgent",
    "TemporalSession",
    "WorkflowClock",
    "WorkflowResult",
    "WorkflowStatus",
    "WorkflowStatusName",
]
