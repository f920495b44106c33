"""What a tool call produced, and its end event."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bastion.core import (
    AgentEvent,
    ToolCall,
    ToolErrorKind,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    Usage,
)

if TYPE_CHECKING:
    from bastion.security import Provenance

    from ._tool import Tool

__all__ = [
    "SkipTool",
    "ToolError",
    "ToolOutcome",
    "end_event",
    "error_outcome",
    "failed_outcome",
]


class ToolError(Exception):
    """Raised by a tool to return an error result the model reads as it is.

    Unlike any other exception (reported as ``"Tool 'x' failed: <type>: <message>"``),
    ``message`` reaches the model unchanged, with its ``kind``; ``metadata``, ``untrusted``
    and ``usage`` are kept with the result as ``ToolResult``'s are (e.g. the usage a failed
    sub-agent spent).

    Args:
        message: What the model reads.
        kind: The error kind of the result (default ``execution_failed``).
        metadata: Data for the application, not shown to the model.
        untrusted: The message carries content that is not first-party.
        usage: What model calls the tool made cost, by ``"provider:model"``.
    """

    def __init__(
        self,
        message: str,
        *,
        kind: ToolErrorKind = "execution_failed",
        metadata: Mapping[str, object] | None = None,
        untrusted: bool = False,
        usage: Mapping[str, Usage] | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.kind: ToolErrorKind = kind
        self.metadata: dict[str, object] = dict(metadata) if metadata else {}
        self.untrusted = untrusted
        self.usage: Mapping[str, Usage] = dict(usage) if usage else {}


@dataclass(kw_only=True, slots=True)
class ToolOutcome:
    """What one call produced: the text the model reads, and whether it is an error.

    Besides the text, what the run and the audit learn from the call travels in typed
    fields (never in ``metadata``, which is the tool's own).

    Attributes:
        call: The call as run (with rewritten arguments, when a hook or a human edited them).
        content: What the model reads.
        is_error: True for an error result.
        error_kind: The kind of error.
        duration: Seconds the tool ran.
        metadata: The tool's ``ToolResult.metadata``.
        untrusted: The content came from a source that is not first-party.
        truncation: The truncation strategy applied, if any.
        sanitization_hits: Injection patterns found in the result.
        promote_tools: Deferred tools the result adds to the run's catalogue.
        spent: Model usage spent producing the result, by model key, in order (a
            sub-agent's calls, a result summary); it joins the run's usage.
        cached: The result came from the tool's results cache; the tool did not run.
        idempotency_key: The key the tool's ``idempotency_key`` computed for the call.
        sanitization_policy: The inbound policy applied to the result, if any.
        original_tokens: Estimated tokens of the result before any size limit (0: not
            measured).
        result_handle: Where the full result was spilled (``read_result`` reads it back).
        provenance: Where the output came from and how far it is trusted (set when the
            agent has a data-flow policy).
        secrets_used: Names of the vault secrets the call revealed (never their values).
        memory_changed: Memory regions the call changed although its tool declares no
            side effects (set by the executor's memory guard).
    """

    call: ToolCall
    content: str
    is_error: bool = False
    error_kind: ToolErrorKind | None = None
    duration: float = 0.0
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    untrusted: bool = False
    truncation: str | None = None
    sanitization_hits: int = 0
    promote_tools: tuple[str, ...] = ()
    spent: tuple[tuple[str, Usage], ...] = ()
    cached: bool = False
    idempotency_key: str | None = None
    sanitization_policy: str | None = None
    original_tokens: int = 0
    result_handle: str | None = None
    provenance: Provenance | None = None
    secrets_used: tuple[str, ...] = ()
    memory_changed: tuple[str, ...] = ()


@dataclass(kw_only=True, slots=True)
class SkipTool:
    """Returned by a ``before`` hook: do not run the tool; use ``result`` instead."""

    result: object


def end_event(outcome: ToolOutcome, run_id: str) -> AgentEvent:
    """The ``tool.execute.end`` (or ``tool.execute.error``) event of an outcome (unnumbered)."""
    call = outcome.call
    if outcome.is_error:
        return ToolExecuteErrorEvent(
            run_id=run_id,
            tool_call_id=call.id,
            tool_name=call.name,
            kind=outcome.error_kind or "execution_failed",
            message=outcome.content,
            duration=outcome.duration,
        )
    return ToolExecuteEndEvent(
        run_id=run_id,
        tool_call_id=call.id,
        tool_name=call.name,
        result=outcome.content,
        duration=outcome.duration,
    )


def error_outcome(
    call: ToolCall, kind: ToolErrorKind, message: str, duration: float = 0.0
) -> ToolOutcome:
    """An error result the model reads."""
    return ToolOutcome(
        call=call, content=message, is_error=True, error_kind=kind, duration=duration
    )


def failed_outcome(tool: Tool, call: ToolCall, exc: BaseException, duration: float) -> ToolOutcome:
    """The error result of a tool that raised."""
    return error_outcome(
        call,
        "execution_failed",
        f"Tool {tool.name!r} failed: {type(exc).__name__}: {exc}",
        duration,
    )
