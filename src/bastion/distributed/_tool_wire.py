"""What one tool call carries across the workflow/activity boundary, besides its arguments.

To the activity: the part of the call's ``RunContext`` that is data (ids, usage, session
state, ...). Back to the workflow: the call's value (or its ``ToolResult``, whole), what the
tool reported while it ran (streamed pieces, progress) and the session state it left, so the
workflow's loop replays them as the local executor would have seen them.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from typing import TYPE_CHECKING, Literal

from pydantic import TypeAdapter
from pydantic_core import to_json

from bastion.core import Usage
from bastion.tools import InputAnswer, InputRequest, Progress, ToolResult

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bastion.core import RunContext

__all__ = [
    "Report",
    "WireContext",
    "WireReply",
    "decode_context",
    "decode_reply",
    "encode_context",
    "encode_reply",
    "reply_of",
]


@dataclass(kw_only=True, slots=True, frozen=True)
class WireContext:
    """The data of a tool call's ``RunContext`` (deps, runtime and clock are the worker's)."""

    run_id: str
    agent_name: str
    session_id: str | None = None
    user_id: str | None = None
    tenant_id: str | None = None
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    session_state: dict[str, object] = field(default_factory=dict[str, object])
    usage: Usage = field(default_factory=Usage)
    step: int = 0
    tool_call_id: str | None = None
    tool_name: str | None = None
    idempotency_key: str | None = None
    input_answer: InputAnswer | None = None


@dataclass(kw_only=True, slots=True, frozen=True)
class Report:
    """One thing a tool reported while it ran: a streamed piece or a progress report."""

    kind: Literal["partial", "progress"]
    text: str = ""
    current: float = 0.0
    total: float | None = None
    message: str | None = None

    def item(self) -> str | Progress:
        """What an async-generator tool yields for this report."""
        if self.kind == "partial":
            return self.text
        return Progress(current=self.current, total=self.total, message=self.message)


@dataclass(kw_only=True, slots=True, frozen=True)
class WireResult:
    """A :class:`ToolResult`, field for field."""

    output: object
    """The tool's output: any value on the worker, its JSON once decoded in the workflow."""
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    untrusted: bool = False
    promote_tools: list[str] = field(default_factory=list[str])
    usage: dict[str, Usage] = field(default_factory=dict[str, Usage])


@dataclass(kw_only=True, slots=True, frozen=True)
class WireReply:
    """The end of one tool call: its value or result, its reports, its session state."""

    value: object = None
    """What the tool returned (its JSON once decoded), when it was not a ``ToolResult``."""
    result: WireResult | None = None
    reports: list[Report] = field(default_factory=list[Report])
    state: dict[str, object] | None = None
    """The session state after the call, when the call changed it."""
    asked: InputRequest | None = None
    """The question of a call that needs a person's answer (it raised ``InputRequired``)."""

    def returned(self) -> object:
        """What the tool function returned (a ``ToolResult`` comes back as one)."""
        result = self.result
        if result is None:
            return self.value
        return ToolResult(
            output=result.output,
            metadata=result.metadata,
            untrusted=result.untrusted,
            promote_tools=tuple(result.promote_tools),
            usage=result.usage,
        )


def reply_of(
    value: object, reports: Sequence[Report], state: dict[str, object] | None
) -> WireReply:
    """The reply of a call that returned ``value`` (an ``InputRequest``: it asked one)."""
    if isinstance(value, InputRequest):
        return WireReply(asked=value, reports=list(reports), state=state)
    if isinstance(value, ToolResult):
        result = WireResult(
            output=value.output,
            metadata=dict(value.metadata),
            untrusted=value.untrusted,
            promote_tools=list(value.promote_tools),
            usage=dict(value.usage),
        )
        return WireReply(result=result, reports=list(reports), state=state)
    return WireReply(value=value, reports=list(reports), state=state)


@cache
def _context_adapter() -> TypeAdapter[WireContext]:
    return TypeAdapter(WireContext)


@cache
def _reply_adapter() -> TypeAdapter[WireReply]:
    return TypeAdapter(WireReply)


def encode_context(ctx: RunContext[object] | None) -> str:
    """The data of ``ctx`` as JSON text (``""``: the tool takes no context)."""
    if ctx is None:
        return ""
    wire = WireContext(
        run_id=ctx.run_id,
        agent_name=ctx.agent_name,
        session_id=ctx.session_id,
        user_id=ctx.user_id,
        tenant_id=ctx.tenant_id,
        metadata=ctx.metadata,
        session_state=ctx.session_state,
        usage=ctx.usage,
        step=ctx.step,
        tool_call_id=ctx.tool_call_id,
        tool_name=ctx.tool_name,
        idempotency_key=ctx.idempotency_key,
        input_answer=ctx.input_answer,
    )
    return to_json(wire, fallback=str).decode()


def decode_context(text: str) -> WireContext | None:
    """The context :func:`encode_context` wrote."""
    return _context_adapter().validate_json(text) if text else None


def encode_reply(reply: WireReply) -> str:
    """A reply as JSON text (models and dataclasses as objects, anything else as text)."""
    return to_json(reply, fallback=str).decode()


def decode_reply(text: str) -> WireReply:
    """The reply :func:`encode_reply` wrote."""
    return _reply_adapter().validate_json(text)
