"""``ProvenanceStamper``: the result processor that labels each tool output with its source.

The agent puts it last in the processor chain when it has a data-flow policy, so the
provenance goes with the text the model actually reads (screened and cut to its limit).
The label (:func:`bastion.security.label_output`) lands in the result's metadata under
:data:`bastion.security.PROVENANCE`; the run's ledger and journal take it from there.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bastion.core import RunContext
from bastion.security import PROVENANCE, DataFlowPolicy, ToolFacts, label_output

if TYPE_CHECKING:
    from ._pipeline import ResultEnvelope
    from ._tool import Tool

__all__ = ["ProvenanceStamper"]


class ProvenanceStamper:
    """Result processor giving every tool output its provenance under ``policy``."""

    __slots__ = ("_policy",)

    def __init__(self, policy: DataFlowPolicy) -> None:
        self._policy = policy

    def applies_to(self, tool: Tool) -> bool:
        """Every tool's output is labelled."""
        return True

    def needs(self, tool: Tool, content: str) -> bool:
        """Every result is labelled."""
        return True

    async def process(self, envelope: ResultEnvelope, ctx: RunContext[Any]) -> None:
        """Put the output's :class:`~bastion.security.Provenance` in its metadata."""
        tool = envelope.tool
        facts = ToolFacts(
            name=tool.name,
            trust_class=tool.trust_class,
            sensitivity=tool.sensitivity,
            source=tool.source,
            marked_untrusted=envelope.untrusted,
            tool_call_id=envelope.call.id,
        )
        metadata = envelope.metadata
        metadata[PROVENANCE] = label_output(self._policy, facts, metadata.get(PROVENANCE))
