"""``SentMessage``: what ``Session.send`` returns, and the words a session's denials use."""

from __future__ import annotations

from typing import Literal, Protocol

from ._events import SendMode

__all__ = [
    "ABORTED",
    "CUT_SHORT",
    "STEERED",
    "ContinueWith",
    "PendingMode",
    "SentMessage",
    "SentStatus",
]

STEERED = "steered"
"""The reason of tool calls denied because a steering message arrived."""
ABORTED = "aborted"
"""The reason of pending approvals denied because their turn was aborted."""
CUT_SHORT = "Tool call not run: the turn was aborted."

SentStatus = Literal["pending", "running", "done", "aborted", "failed"]
PendingMode = Literal["deny", "hold"]
"""What a steering message does to calls waiting for approval: deny them, or wait."""
ContinueWith = Literal["last_agent", "session_agent"]
"""Which agent starts a turn: the one the last turn ended with, or the session's own."""


class _Aborts(Protocol):
    """What a message's abort is passed to: the session it was sent to."""

    def _abort_sent(self, sent: SentMessage, /) -> bool: ...


class SentMessage:
    """What :meth:`Session.send` returns: the message, its progress, and its abort.

    ``status``: ``pending`` (waiting for a turn), ``running`` (in the turn in progress,
    which may wait for approvals), ``done``, ``aborted`` or ``failed``.
    """

    __slots__ = ("_session", "mode", "status", "text")

    def __init__(self, session: _Aborts, text: str, mode: SendMode) -> None:
        self._session = session
        self.text = text
        self.mode: SendMode = mode
        self.status: SentStatus = "pending"

    def abort(self) -> bool:
        """Abort this message's work; other messages go on.

        A message still waiting is dropped; one that joined the turn in progress aborts
        that turn (see :meth:`Session.abort`). Returns False when its work is over.
        """
        return self._session._abort_sent(self)

    def __repr__(self) -> str:
        return f"SentMessage({self.text!r}, mode={self.mode!r}, status={self.status!r})"
