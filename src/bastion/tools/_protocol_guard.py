"""``ProtocolGuardStage``: the result processor that escapes control characters in tool output.

The agent puts it right after inbound sanitisation when ``SecurityConfig(protocol_guard=...)``
is set: the sanitiser sees the text as the tool returned it (zero-width characters are one
of its signals), then every guarded character is written as a visible escape before size
limits, provenance and the model see the result. Each escaped character is counted under
``security.protocol_guard.escaped.total{class=...,tool=...}``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bastion.core import RunContext
from bastion.observability import Counters
from bastion.security import ProtocolGuard

if TYPE_CHECKING:
    from ._pipeline import ResultEnvelope
    from ._tool import Tool

__all__ = ["ProtocolGuardStage"]


class ProtocolGuardStage:
    """Result processor escaping the control characters ``guard`` names, in every output."""

    __slots__ = ("_counters", "_guard")

    def __init__(self, guard: ProtocolGuard, counters: Counters) -> None:
        self._guard = guard
        self._counters = counters

    def applies_to(self, tool: Tool) -> bool:
        """Every tool's output crosses into the model's context."""
        return True

    def needs(self, tool: Tool, content: str) -> bool:
        """Only results holding a guarded character (one regex scan)."""
        return self._guard.needs(content)

    async def process(self, envelope: ResultEnvelope, ctx: RunContext[Any]) -> None:
        """Rewrite the content with visible escapes and count what was escaped."""
        escaped = self._guard.escape(envelope.content)
        envelope.content = escaped.text
        for name, count in escaped.counts.items():
            self._counters.incr(
                "security.protocol_guard.escaped.total",
                count,
                tool=envelope.tool.name,
                **{"class": name},
            )
