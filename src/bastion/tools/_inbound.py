"""``InboundSanitizer``: the result processor that screens tool output.

The agent puts it first in the executor's processor chain, so it sees the whole body before
any limit cuts it. It resolves each tool's policy (the agent-wide override, else the tool's
``inbound_sanitization``, else the default of its trust class), runs
:func:`bastion.security.sanitize_inbound`, and marks results of non-first-party tools as
untrusted so the prompt carries the inbound preamble.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from bastion.core import RunContext
from bastion.security import InboundPolicy, default_inbound_policy, sanitize_inbound

if TYPE_CHECKING:
    from bastion.observability import Counters

    from ._pipeline import ResultEnvelope
    from ._tool import Tool

__all__ = ["FIRST_PARTY_TRUST_CLASSES", "InboundSanitizer"]

FIRST_PARTY_TRUST_CLASSES = frozenset({"first_party_built_in", "first_party_user_defined"})
"""Trust classes whose output is trusted (no preamble, pass-through by default)."""


class InboundSanitizer:
    """Result processor applying the inbound sanitisation policy of each tool.

    Args:
        override: A policy for every tool, replacing per-tool settings and trust-class
            defaults (``ToolOptions(inbound_sanitization=...)``).
        counters: Where ``tool.inbound.sanitization.*`` counters go (scans per policy,
            blocked results, hits per category). Total hits are counted by the executor.
    """

    __slots__ = ("_counters", "_override")

    _override: InboundPolicy | None
    _counters: Counters | None

    def __init__(
        self, *, override: InboundPolicy | None = None, counters: Counters | None = None
    ) -> None:
        self._override = override
        self._counters = counters

    def policy_for(self, tool: Tool) -> InboundPolicy:
        """The policy applied to ``tool``'s results."""
        if self._override is not None:
            return self._override
        if tool.inbound_sanitization is not None:
            return tool.inbound_sanitization
        return default_inbound_policy(tool.trust_class)

    def applies_to(self, tool: Tool) -> bool:
        """False for first-party pass-through tools: they cost nothing.

        A pass-through tool of another trust class still passes through here, only to be
        marked untrusted.
        """
        return (
            self.policy_for(tool) != "pass-through"
            or tool.trust_class not in FIRST_PARTY_TRUST_CLASSES
        )

    def needs(self, tool: Tool, content: str) -> bool:
        """Every result of a tool it applies to is screened (or at least marked untrusted)."""
        return True

    async def process(self, envelope: ResultEnvelope, ctx: RunContext[Any]) -> None:
        """Scan and rewrite the result; a fail-closed hit turns it into an error."""
        tool = envelope.tool
        policy = self.policy_for(tool)
        envelope.untrusted = envelope.untrusted or tool.trust_class not in FIRST_PARTY_TRUST_CLASSES
        envelope.sanitization_policy = policy
        scan = sanitize_inbound(envelope.content, policy=policy, fail_closed=tool.fail_closed)
        envelope.sanitization_hits = len(scan.hits)
        counters = self._counters
        if counters is not None and policy != "pass-through":
            counters.incr("tool.inbound.sanitization.scans.total", policy=policy)
            for hit in scan.hits:
                counters.incr(
                    "tool.inbound.sanitization.category_hits.total", category=hit.category
                )
        if scan.blocked:
            if counters is not None:
                counters.incr("tool.inbound.sanitization.blocked.total")
            envelope.error_kind = "inbound_sanitization_blocked"
            # Name the tool and the categories only: echoing the matched text would hand the
            # injection to the model after all.
            envelope.content = (
                f"The result of tool {tool.name!r} was withheld: it contained "
                f"{len(scan.hits)} possible injected instruction(s) "
                f"({', '.join(scan.categories)}) and the tool is fail-closed."
            )
            return
        envelope.content = scan.text
