"""The decisions the approval routes make: one form for local runs, sessions and workflows."""

from __future__ import annotations

from bastion.governance import MutateDecision
from bastion.tools import ApprovalDecision, Directive, InterruptResolution

from ._models import PendingItem

__all__ = ["Choice", "denial", "directive_of", "raised_limit"]

Choice = ApprovalDecision | InterruptResolution
"""One decision on one pending item: a call's approval or an interrupt's resolution."""


def denial(item_id: str, reason: str | None, *, interrupt: bool) -> Choice:
    """Deny a call (the model reads ``reason``) or, for an ``interrupt``, a budget interrupt."""
    why = reason or "Denied by a person."
    if interrupt:
        return InterruptResolution(
            interrupt_id=item_id, decision={"decision": "deny", "reason": why}
        )
    return ApprovalDecision(tool_call_id=item_id, granted=False, reason=why)


def raised_limit(item: PendingItem, maximum: float) -> InterruptResolution:
    """Raise the limit the budget interrupt ``item`` stopped at to ``maximum``, and retry."""
    return InterruptResolution(
        interrupt_id=item.id, decision=MutateDecision.raising(item.limit or {}, maximum)
    )


def directive_of(choice: Choice) -> Directive:
    """A directive holding the one decision."""
    if isinstance(choice, InterruptResolution):
        return Directive(interrupts=[choice])
    return Directive(approvals=[choice])
