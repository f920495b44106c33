"""Turning ``bastion graph resume`` options into a ``Directive``, checked against what waits.

Each pending item of a suspended execution (``graph_suspended``) is a tool call of an agent
node (``kind="approval"``) or an interrupt (a paused node, a budget limit): ``--approve``
and ``--deny`` decide either, ``--value`` answers a paused node (``ctx.pause`` returns it).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence

from bastion.core import JsonValue, UserError
from bastion.governance import DenyDecision, InterruptDecision, ResultDecision, RetryDecision
from bastion.tools import ApprovalDecision, Directive, InterruptResolution

__all__ = ["graph_directive"]


def graph_directive(
    pending: Sequence[Mapping[str, object]],
    approve: Sequence[str],
    deny: Sequence[str],
    values: Sequence[str],
) -> Directive | None:
    """The directive the options make; ``None`` when none was given.

    Raises:
        UserError: An id the execution does not wait for, a bad ``--value``, or an item
            decided twice.
    """
    kinds = {str(item.get("id")): str(item.get("kind", "")) for item in pending}
    approvals: list[ApprovalDecision] = []
    interrupts: list[InterruptResolution] = []
    seen: set[str] = set()

    def add(item: str, granted: bool, reason: str | None, decision: InterruptDecision) -> None:
        if item not in kinds:
            shown = ", ".join(sorted(kinds)) or "nothing"
            raise UserError(f"The execution does not wait for {item!r}; it waits for: {shown}.")
        if item in seen:
            raise UserError(f"{item!r} is decided twice; give one decision per item.")
        seen.add(item)
        if kinds[item] == "approval":
            approvals.append(ApprovalDecision(tool_call_id=item, granted=granted, reason=reason))
        else:
            interrupts.append(InterruptResolution(interrupt_id=item, decision=decision))

    for item in approve:
        add(item, True, None, RetryDecision())
    for option in deny:
        item, _, reason = option.partition(":")
        add(item, False, reason or "denied", DenyDecision(reason=reason or "denied"))
    for option in values:
        item, sep, raw = option.partition("=")
        if not sep:
            raise UserError(f"Invalid --value {option!r}: use ID=JSON, e.g. --value int_1='{{}}'.")
        try:
            value: JsonValue = json.loads(raw)
        except ValueError:
            value = raw
        if kinds.get(item) == "approval":
            raise UserError(f"{item!r} is a tool call: --approve or --deny it.")
        add(item, True, None, ResultDecision(value=value))
    if not approvals and not interrupts:
        return None
    return Directive(approvals=approvals, interrupts=interrupts)
