"""Sessions: stateful conversations on an agent that you can steer.

``agent.session()`` / ``await agent.resume_session(id)`` return a :class:`Session`.
"""

from ._events import (
    EVENTS,
    ApprovalRequested,
    Compacted,
    InterruptRequested,
    MessageAdded,
    SendMode,
    SessionError,
    SessionEvent,
    StepDone,
    TextDelta,
    ToolResult,
    TurnAborted,
    TurnEnd,
)
from ._link import SessionAgent
from ._session import ABORTED, STEERED, SentMessage, Session

__all__ = [
    "ABORTED",
    "ApprovalRequested",
    "Compacted",
    "EVENTS",
    "InterruptRequested",
    "MessageAdded",
    "STEERED",
    "SendMode",
    "SentMessage",
    "Session",
    "SessionAgent",
    "SessionError",
    "SessionEvent",
    "StepDone",
    "TextDelta",
    "ToolResult",
    "TurnAborted",
    "TurnEnd",
]
