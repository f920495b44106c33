"""What session listeners receive: the event names, their typed values, send modes.

Owned by :mod:`bastion.sessions`; ``_listeners.py`` dispatches these values and
``_session.py`` produces them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal, TypeAlias, TypedDict, get_args

from bastion.core import (
    AssistantMessage,
    FinishReason,
    Message,
    RunError,
    Usage,
    UserError,
    UserMessage,
)
from bastion.tools import ApprovalRequest

__all__ = [
    "EVENTS",
    "SEND_MODES",
    "ApprovalRequested",
    "Compacted",
    "InterruptRequested",
    "MessageAdded",
    "PendingInterrupt",
    "RunStarted",
    "SendMode",
    "SessionError",
    "SessionEvent",
    "StepDone",
    "TextDelta",
    "ToolResult",
    "TurnAborted",
    "TurnEnd",
    "check_mode",
]

SendMode: TypeAlias = Literal["steer", "queue"]
SEND_MODES: tuple[SendMode, ...] = ("steer", "queue")
SessionEvent: TypeAlias = Literal[
    "run",
    "text_delta",
    "message",
    "tool_call",
    "tool_result",
    "step",
    "approval_requested",
    "interrupt_requested",
    "turn_end",
    "compacted",
    "error",
]
EVENTS: tuple[SessionEvent, ...] = get_args(SessionEvent)


@dataclass(frozen=True, slots=True)
class RunStarted:
    """``run``: a turn started run ``run_id``, or continued or resumed it (before its events)."""

    run_id: str


@dataclass(frozen=True, slots=True)
class TextDelta:
    """``text_delta``: a piece of the model's answer."""

    delta: str


@dataclass(frozen=True, slots=True)
class MessageAdded:
    """``message``: a user or assistant message joined the transcript."""

    message: UserMessage | AssistantMessage


@dataclass(frozen=True, slots=True)
class ToolResult:
    """``tool_result``: a tool call's result (``is_error``: the model reads an error)."""

    call_id: str
    name: str
    result: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class StepDone:
    """``step``: a model call ended (message, usage, finish reason), before its tools run."""

    usage: Usage
    finish_reason: FinishReason


@dataclass(frozen=True, slots=True)
class ApprovalRequested:
    """``approval_requested``: the turn waits for a human decision on this call."""

    request: ApprovalRequest


class PendingInterrupt(TypedDict):
    """A governance interrupt a turn waits for (``SuspendedInterrupt.to_dict()``'s form).

    ``kind`` is ``limit`` (a mutable limit was reached: ``oracle``, ``limit_type``,
    ``window``, ``current``, ``max``, ``proposed`` and ``approvers`` say which) or ``policy``
    (``payload`` is the policy's); ``on`` and ``tool_call_ids`` say what waits for it.
    """

    id: str
    kind: Literal["limit", "policy"]
    action: str
    oracle: str
    node: str
    limit_type: str | None
    window: str | None
    current: float | None
    max: float | None
    proposed: float | None
    approvers: list[str]
    reason: str
    payload: object
    on: Literal["model", "tool", "round"]
    tool_call_ids: list[str]


@dataclass(frozen=True, slots=True)
class InterruptRequested:
    """``interrupt_requested``: the turn waits for a human to decide a governance interrupt.

    ``interrupt`` is the interrupt as the run state holds it (``id``, ``reason``, and for a
    limit its ``oracle``, ``limit_type``, ``current``, ``max``, ``approvers``); decide it
    with ``session.decide(Directive(interrupts=[InterruptResolution(...)]))``.
    """

    interrupt: PendingInterrupt

    @property
    def id(self) -> str:
        """The interrupt's id (``InterruptResolution.interrupt_id``)."""
        return str(self.interrupt.get("id", ""))

    @property
    def reason(self) -> str:
        """Why the run stopped, in words."""
        return str(self.interrupt.get("reason", ""))


@dataclass(frozen=True, slots=True)
class TurnEnd:
    """``turn_end``: the loop settled; the whole transcript and the last answer."""

    messages: list[Message]
    text: str


@dataclass(frozen=True, slots=True)
class Compacted:
    """``compacted``: the transcript was compacted (stored as a ``compacted`` entry).

    ``source`` is ``manual`` (``session.compact()``) or ``auto-trigger`` (a turn's run passed
    its agent's compaction trigger); the tokens are the history's before and after.
    """

    before_tokens: int
    after_tokens: int
    summary_tokens: int
    strategy: str
    source: Literal["auto-trigger", "manual", "pre-step"]
    duration: float


@dataclass(frozen=True, slots=True)
class SessionError:
    """``error``: the loop failed (``wait_for_idle`` raises it), or a turn was aborted.

    An aborted turn's ``error`` is a :class:`TurnAborted`; ``wait_for_idle`` does not raise
    it, and the session goes on with the messages still queued.
    """

    error: BaseException


class TurnAborted(RunError):
    """A turn was aborted (``session.abort()`` or ``SentMessage.abort()``)."""


def check_mode(mode: object, what: str) -> SendMode:
    """``mode`` as a :data:`SendMode`.

    Raises:
        UserError: ``mode`` is not ``steer`` or ``queue``.
    """
    if mode == "steer":
        return "steer"
    if mode == "queue":
        return "queue"
    raise UserError(f"{what} must be 'steer' or 'queue', got {mode!r}.")
