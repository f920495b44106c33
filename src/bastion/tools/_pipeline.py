"""What happens to a tool's result after it ran and before the model reads it.

Each :class:`ResultProcessor` sees the result in a :class:`ResultEnvelope`, in order:
inbound sanitisation first (it must see the whole body), then size limits (truncation,
spill to a file, summary). A processor may rewrite ``content``, record what it did for the
audit, or turn the result into an error by setting ``error_kind``. The executor asks each
processor once per tool whether it applies, so tools no processor applies to cost nothing.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bastion.core import RunContext, ToolCall, ToolErrorKind, Usage

if TYPE_CHECKING:
    from ._tool import Tool

__all__ = ["ResultEnvelope", "ResultProcessor"]


@dataclass(kw_only=True, slots=True)
class ResultEnvelope:
    """A tool's rendered result on its way to the model.

    Attributes:
        tool: The tool that produced it.
        call: The call.
        content: The text the model will read.
        error_kind: Set by a processor to turn the result into an error of this kind
            (``content`` is then the error message).
        truncation: The truncation strategy applied, if any.
        original_tokens: Estimated tokens of the result before any limit.
        sanitization_policy: The inbound policy applied.
        sanitization_hits: How many injection patterns matched.
        untrusted: True when the content came from a source that is not first-party
            (the prompt then carries the inbound preamble).
        metadata: The tool's ``ToolResult.metadata`` (application data, never shown).
        spent: Model usage spent on the result (a summary), by model key.
        result_handle: Where the full result was spilled, if it was.
    """

    tool: Tool
    call: ToolCall
    content: str
    error_kind: ToolErrorKind | None = None
    truncation: str | None = None
    original_tokens: int = 0
    sanitization_policy: str | None = None
    sanitization_hits: int = 0
    untrusted: bool = False
    metadata: dict[str, object] = field(default_factory=dict[str, object])
    spent: list[tuple[str, Usage]] = field(default_factory=list[tuple[str, Usage]])
    result_handle: str | None = None


class ResultProcessor(Protocol):
    """One stage of result processing."""

    def applies_to(self, tool: Tool) -> bool:
        """Whether this stage can change results of ``tool`` (asked once per tool)."""
        ...

    def needs(self, tool: Tool, content: str) -> bool:
        """Whether this result needs :meth:`process` (a cheap check, made per result).

        When no processor of a tool's chain needs a result, it goes to the model as is.
        """
        ...

    async def process(self, envelope: ResultEnvelope, ctx: RunContext[Any]) -> None:
        """Inspect or rewrite the result in place."""
        ...
