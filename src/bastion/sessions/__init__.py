"""Sessions: stateful conversations on an agent that you can steer.

``Session(agent)`` opens one, ``await Session.resume(agent, id)`` reopens a stored one.
"""

from ._events import (
    EVENTS,
    ApprovalRequested,
    Compacted,
    InterruptRequested,
    MessageAdded,
    PendingInterrupt,
    RunStarted,
    SendMode,
    SessionError,
    SessionEvent,
    StepDone,
    TextDelta,
    ToolResult,
    TurnAborted,
    TurnEnd,
)
from ._session import ABORTED, STEERED, SentMessage, Session

__all__ = [
    "ABORTED",
    "ApprovalRequested",
    "Compacted",
    "EVENTS",
    "InterruptRequested",
    "MessageAdded",
    "PendingInterrupt",
    "RunStarted",
    "STEERED",
    "SendMode",
    "SentMessage",
    "Session",
    "SessionError",
    "SessionEvent",
    "StepDone",
    "TextDelta",
    "ToolResult",
    "TurnAborted",
    "TurnEnd",
]
