"""What a session workflow carries across continue-as-new, and what a client reads of it."""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import Annotated, Literal, TypeAlias

from pydantic import Field, TypeAdapter

from bastion.core import Message, RunErrorInfo, Usage
from bastion.tools import ApprovalRequest

from ._views import WorkflowInterrupt

__all__ = [
    "SessionCarry",
    "SessionStatusName",
    "SessionView",
    "carry_adapter",
    "view_adapter",
]

SessionStatusName: TypeAlias = Literal["idle", "running", "awaiting_approval", "closed"]
_Messages: TypeAlias = list[Annotated[Message, Field(discriminator="role")]]


@dataclass(kw_only=True, slots=True, frozen=True)
class SessionCarry:
    """The session as one workflow run hands it to the next (the workflow's input).

    Attributes:
        messages: The transcript (no system prompt).
        usage: Usage summed over every model call of the session.
        turns: How many turns ended.
        steering: Steering messages that wait for a turn.
        queue: Queued messages that wait for a turn.
        state: ``ctx.session_state`` of the session's runs.
        continue_after: The history length (events) after which the session continues
            as new, between two turns.
        generation: How many times the session continued as new.
        error: Why the last turn did not complete, when it did not.
        published: The seq of the last event the session published.
        marks: The settle tokens whose ``mark`` signal this run applied and whose
            ``settle`` update has not come: it may reach the next run.
    """

    messages: _Messages = field(default_factory=_Messages)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    steering: list[str] = field(default_factory=list[str])
    queue: list[str] = field(default_factory=list[str])
    state: dict[str, object] = field(default_factory=dict[str, object])
    continue_after: int = 10_000
    generation: int = 0
    error: RunErrorInfo | None = None
    published: int = 0
    marks: list[str] = field(default_factory=list[str])


@dataclass(kw_only=True, slots=True, frozen=True)
class SessionView:
    """What a session on Temporal holds now (its ``view`` query, or its result once closed).

    Attributes:
        session_id: The session's id (its workflow id).
        status: ``idle``, ``running`` (a turn runs, or messages wait for one),
            ``awaiting_approval`` (the turn waits for decisions on calls or on
            governance interrupts) or ``closed``.
        messages: The transcript, with what the running turn added so far.
        usage: Usage summed over every model call of the session.
        turns: How many turns ended.
        waiting: How many sent messages wait for a turn (or, steering, for the next step).
        pending: The calls waiting for a decision (with ``awaiting_approval``).
        interrupts: The governance interrupts the turn waits on (a budget reached, a
            policy asking): decided with ``raise_budget`` or ``resolve``.
        error: Why the last turn did not complete, when it did not.
        generation: How many times the session continued as new.
    """

    session_id: str
    status: SessionStatusName
    messages: _Messages = field(default_factory=_Messages)
    usage: Usage = field(default_factory=Usage)
    turns: int = 0
    waiting: int = 0
    pending: list[ApprovalRequest] = field(default_factory=list[ApprovalRequest])
    interrupts: list[WorkflowInterrupt] = field(default_factory=list[WorkflowInterrupt])
    error: RunErrorInfo | None = None
    generation: int = 0

    @property
    def text(self) -> str:
        """The text of the last assistant message ('' before the first answer)."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.text
        return ""


@cache
def carry_adapter() -> TypeAdapter[SessionCarry]:
    """The adapter of the workflow's input."""
    return TypeAdapter(SessionCarry)


@cache
def view_adapter() -> TypeAdapter[SessionView]:
    """The adapter of the ``view`` query's answer and of the workflow's result."""
    return TypeAdapter(SessionView)
