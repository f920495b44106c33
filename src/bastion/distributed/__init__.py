"""Running agents on an existing distributed engine (Temporal); needs ``bastion[temporal]``.

Nothing else in Bastion imports this package.
"""

from ._agent import TemporalAgent
from ._interrupts import WorkflowInterrupt
from ._proxies import WorkflowClock
from ._views import WorkflowResult, WorkflowStatus, WorkflowStatusName

__all__ = [
    "TemporalAgent",
    "WorkflowClock",
    "WorkflowInterrupt",
    "WorkflowResult",
    "WorkflowStatus",
    "WorkflowStatusName",
]
