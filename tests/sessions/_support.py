"""Tools and recorders shared by the session tests."""

from __future__ import annotations

from typing import Any

from bastion import tool
from bastion.core import AssistantMessage, Message, RunContext, ToolMessage, UserMessage
from bastion.sessions import Session
from bastion.tools import Tool


def tools(log: list[str]) -> list[Tool]:
    """``look`` (read-only), ``remember`` (session state) and ``pay`` (needs approval)."""

    @tool(side_effect_class="read_only")
    def look(what: str) -> str:
        """Look at something."""
        log.append(what)
        return f"saw {what}"

    @tool(side_effect_class="read_only")
    def remember(ctx: RunContext[Any], key: str) -> str:
        """Remember a key in the session state."""
        ctx.session_state[key] = ctx.session_state.get(key, 0) + 1
        return "ok"

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def pay(to: str, amount: int) -> str:
        """Send money."""
        log.append(f"pay {to} {amount}")
        return f"paid {amount} to {to}"

    return [look, remember, pay]


def record(session: Session) -> list[str]:
    """One line per session event, in order."""
    lines: list[str] = []

    def describe(message: Message) -> str:
        if isinstance(message, UserMessage):
            return f"message user {message.content!r}"
        assert isinstance(message, AssistantMessage)
        return f"message assistant {len(message.tool_calls)} calls"

    session.on("message", lambda e: lines.append(describe(e.message)))
    session.on("text_delta", lambda e: lines.append(f"text_delta {e.delta!r}"))
    session.on("tool_call", lambda r: lines.append(f"tool_call {r.call.name}#{r.call.id}"))
    session.on(
        "tool_result",
        lambda e: lines.append(f"tool_result {e.name}#{e.call_id} {e.result!r} {e.is_error}"),
    )
    session.on("step", lambda e: lines.append(f"step {e.finish_reason}"))
    session.on(
        "approval_requested",
        lambda e: lines.append(
            f"approval_requested {e.request.tool_name}#{e.request.tool_call_id}"
        ),
    )
    session.on("turn_end", lambda e: lines.append(f"turn_end {len(e.messages)} {e.text!r}"))
    session.on("error", lambda e: lines.append(f"error {type(e.error).__name__}"))
    return lines


def texts(messages: list[Message]) -> list[str]:
    """The transcript in brief: ``user:...``, ``assistant:...``/``assistant:calls``, ``tool:id``."""
    out: list[str] = []
    for m in messages:
        if isinstance(m, UserMessage):
            out.append(f"user:{m.content}")
        elif isinstance(m, AssistantMessage):
            out.append(f"assistant:{m.text}" if not m.tool_calls else "assistant:calls")
        elif isinstance(m, ToolMessage):
            out.append(f"tool:{m.tool_call_id}{'!' if m.is_error else ''}")
    return out


def answered(messages: list[Message]) -> bool:
    """Every tool call of the transcript has exactly one result, after its call."""
    open_calls: set[str] = set()
    seen: set[str] = set()
    for m in messages:
        if isinstance(m, AssistantMessage):
            if open_calls:
                return False
            open_calls = {c.id for c in m.tool_calls}
        elif isinstance(m, ToolMessage):
            if m.tool_call_id not in open_calls or m.tool_call_id in seen:
                return False
            seen.add(m.tool_call_id)
            open_calls.discard(m.tool_call_id)
        elif open_calls:
            return False
    return not open_calls
