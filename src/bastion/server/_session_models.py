"""The request and response bodies of the session endpoints."""

from __future__ import annotations

from datetime import datetime
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, JsonValue

from ._models import PendingItem

__all__ = [
    "CreateSession",
    "History",
    "SendMessage",
    "Sent",
    "SessionList",
    "SessionView",
]


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CreateSession(_Body):
    """Open a conversation with one of the served agents."""

    agent: str | None = Field(
        default=None, description="The agent's name; may be left out when one agent is served."
    )
    session_id: str | None = Field(
        default=None,
        min_length=1,
        max_length=200,
        pattern=r"^[A-Za-z0-9_.:-]+$",
        description="The session's id (default: a new one); 409 when it is taken.",
    )
    send_mode: Literal["steer", "queue"] | None = Field(
        default=None, description="The default mode of its messages (default: the agent's)."
    )


class SendMessage(_Body):
    """A user message for the session."""

    text: str = Field(min_length=1, description="The user's message.")
    mode: Literal["steer", "queue"] | None = Field(
        default=None,
        description="While a turn runs: `steer` joins it before its next model call (tool "
        "calls not yet decided are denied), `queue` waits for it to end. Default: the "
        "session's send_mode.",
    )


class Sent(BaseModel):
    """A message was taken; its work shows on the session's event stream."""

    session_id: str
    mode: Literal["steer", "queue"]
    status: str = Field(description="`pending` (waits for a turn) or `running`.")
    events: str


class SessionView(BaseModel):
    """A served session: whose it is, what it does, what it waits for."""

    session_id: str
    agent: str
    tenant_id: str | None
    status: Literal["idle", "running", "waiting"]
    send_mode: Literal["steer", "queue"]
    created_at: datetime
    messages: int = Field(description="Messages in the transcript.")
    runs: list[str] = Field(description="The runs of its turns seen by this server, oldest first.")
    pending: list[PendingItem]


class SessionList(BaseModel):
    """One page of sessions, newest first."""

    sessions: list[SessionView]
    next_offset: int | None


class History(BaseModel):
    """The transcript, oldest first (each message in the library's JSON form)."""

    session_id: str
    messages: list[dict[str, JsonValue]]
