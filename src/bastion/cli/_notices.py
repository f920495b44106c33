"""One-line notices for the events that interrupt the flow of a run.

Retries, fallbacks, guardrails, approvals, compaction, cancellation, errors and cut-off tool
calls each become one styled line. Called by ``_render``, which prints them in place.
"""

from __future__ import annotations

from typing import TypeAlias, assert_never

from rich.text import Text

from bastion.core import (
    AgentCancellingEvent,
    AgentErrorEvent,
    AgentFollowUpEvent,
    AgentSteeredEvent,
    AgentSuggestionsEvent,
    ContextCompactedEvent,
    ContextCompactionFailedEvent,
    GovernanceEvent,
    GuardrailTrippedEvent,
    ModelCircuitEvent,
    ModelFellbackEvent,
    ModelRetryEvent,
    ToolApprovalRequestedEvent,
    ToolApprovalResolvedEvent,
    ToolCallIncompleteEvent,
    ToolLoopDetectedEvent,
    ToolRetryEvent,
    ToolSourceErrorEvent,
    VerifierResultEvent,
)

from ._format import format_call, format_duration, preview
from ._json import as_object

__all__ = ["NoticeEvent", "notice"]

_CallNotice: TypeAlias = (
    GovernanceEvent
    | GuardrailTrippedEvent
    | ModelCircuitEvent
    | ModelFellbackEvent
    | ModelRetryEvent
    | ToolApprovalRequestedEvent
    | ToolApprovalResolvedEvent
    | ToolCallIncompleteEvent
    | ToolSourceErrorEvent
    | ToolRetryEvent
    | ToolLoopDetectedEvent
)
"""Notices about one model or tool call: retries, fallbacks, gates, approvals."""

_RunNotice: TypeAlias = (
    AgentCancellingEvent
    | AgentErrorEvent
    | AgentFollowUpEvent
    | AgentSteeredEvent
    | AgentSuggestionsEvent
    | ContextCompactedEvent
    | ContextCompactionFailedEvent
    | VerifierResultEvent
)
"""Notices about the run: compaction, steering, verification, cancellation, errors."""

NoticeEvent: TypeAlias = _CallNotice | _RunNotice


def notice(event: NoticeEvent) -> Text:
    """Return the line that reports ``event``."""
    if isinstance(event, _RunNotice):
        return _run_notice(event)
    return _call_notice(event)


def _call_notice(event: _CallNotice) -> Text:
    match event:
        case ModelRetryEvent():
            return _line(
                "↻",
                f"{event.model} failed ({preview(event.error)}); "
                f"retry {event.attempt} in {format_duration(event.delay)}",
                "yellow",
            )
        case ModelFellbackEvent():
            why = "circuit open" if event.reason == "circuit_open" else preview(event.error)
            return _line(
                "⤳",
                f"falling back from {event.previous_model} to {event.next_model} ({why})",
                "yellow",
            )
        case ModelCircuitEvent():
            if event.state == "closed":
                return _line("●", f"{event.model} answers again: circuit closed", "green")
            return _line(
                "○",
                f"{event.model} circuit open after {event.failures} failure(s); "
                f"skipped for {format_duration(event.cool_down)}",
                "yellow",
            )
        case GuardrailTrippedEvent():
            return _line(
                "⚠",
                f"guardrail {event.guardrail!r} ({event.stage}) {event.action}: {event.reason}",
                "red" if event.action == "block" else "yellow",
            )
        case GovernanceEvent():
            return _governance(event)
        case ToolApprovalRequestedEvent():
            call = format_call(event.tool_name, event.arguments)
            return _line("?", f"{call} waits for a human decision", "yellow")
        case ToolApprovalResolvedEvent():
            verdict = "approved" if event.granted else "denied"
            if event.timed_out:
                verdict += " (no decision in time)"
            why = f": {event.reason}" if event.reason else ""
            return _line(
                "✓" if event.granted else "✗",
                f"{event.tool_name} {verdict}{why}",
                "green" if event.granted else "red",
            )
        case ToolCallIncompleteEvent():
            return _line(
                "✗",
                f"the call to {event.tool_name} was cut off before its arguments were "
                "complete; it was not run",
                "red",
            )
        case ToolSourceErrorEvent():
            return _line("✗", f"tools of {event.source} unavailable: {event.message}", "red")
        case ToolRetryEvent():
            return _line(
                "↻",
                f"{event.tool_name} rate-limited ({preview(event.error)}); "
                f"attempt {event.attempt} in {format_duration(event.delay)}",
                "yellow",
            )
        case ToolLoopDetectedEvent():
            return _line(
                "⟲",
                f"{event.tool_name} called {event.count} times with the same arguments "
                f"({event.action})",
                "red" if event.action == "fail" else "yellow",
            )
        case _:
            assert_never(event)


def _run_notice(event: _RunNotice) -> Text:
    match event:
        case ContextCompactedEvent():
            return _line(
                "⇣",
                f"context compacted: {event.before_tokens:,} → {event.after_tokens:,} tokens",
                "dim",
            )
        case ContextCompactionFailedEvent():
            return _line(
                "!",
                f"context not compacted ({event.tokens:,} tokens): {event.reason}",
                "yellow",
            )
        case AgentCancellingEvent():
            what = "finishing the current step" if event.drain else "stopping now"
            return _line("■", f"cancelling: {what}", "yellow")
        case AgentSteeredEvent():
            return _line("»", f"steered: {preview(event.text)}", "cyan")
        case AgentFollowUpEvent():
            return _line("»", f"follow-up: {preview(event.text)}", "cyan")
        case AgentSuggestionsEvent():
            if event.error is not None:
                return _line("!", f"no suggestions: {preview(event.error)}", "yellow")
            return _line("?", "you could ask: " + " | ".join(event.suggestions), "dim")
        case VerifierResultEvent():
            if event.passed:
                extra = f" (raised {preview(event.error)})" if event.error else ""
                return _line("✓", f"verifier {event.verifier!r} passed{extra}", "green")
            return _line(
                "✗", f"verifier {event.verifier!r} failed: {preview(event.feedback)}", "yellow"
            )
        case AgentErrorEvent():
            return Text(f"✗ {event.code}: {event.message}", style="bold red")
        case _:
            assert_never(event)


def _governance(event: GovernanceEvent) -> Text:
    data = event.data
    key = data.get("key", "")
    signal = event.signal
    if signal == "oracle.denied":
        return _line("⚖", f"{key} denied: {data.get('reason', '')}", "red")
    if signal == "oracle.exceeded":
        what = f"{data.get('limit_type')} {data.get('current', 0):g} of {data.get('max', 0):g}"
        return _line("⚖", f"{key}: {what} reached ({data.get('window')})", "yellow")
    if signal == "oracle.interrupt.in":
        interrupt = as_object(data.get("interrupt"))
        return _line("⚖", f"{key} paused: {interrupt.get('reason', '')}", "yellow")
    if signal == "oracle.interrupt.out":
        return _line("⚖", f"{key} decided: {data.get('decision')}", "yellow")
    if signal.startswith("oracle.mutation."):
        limit = f"{data.get('limit_type')} on {data.get('oracle')!r}"
        if data.get("accepted"):
            message = f"{limit} raised to {data.get('new_max', 0):g}"
        else:
            message = f"raising {limit} refused (max stays {data.get('previous_max', 0):g})"
        return _line("⚖", message, "yellow")
    return _line("·", f"{signal} {key}", "dim")


def _line(icon: str, message: str, style: str) -> Text:
    return Text.assemble("  ", (icon, style), " ", (message, style))
