"""A resume directive as JSON: what ``graph_resumed`` records and a resumed agent node reads.

``Graph.resume`` turns its :class:`~bastion.tools.Directive` into this shape once; the store
checkpointer writes it and hands it to the agent nodes the resume continues.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypedDict

from bastion.core import JsonValue

__all__ = ["ApprovalJson", "DirectiveJson", "ResolutionJson"]


class ApprovalJson(TypedDict):
    """A decision on a tool call that waited for approval (``ApprovalDecision``'s fields)."""

    tool_call_id: str
    granted: bool
    reason: str | None
    arguments: dict[str, JsonValue] | None
    result: str | None
    digest: str | None


class ResolutionJson(TypedDict):
    """A decision on a pending interrupt; ``decision`` is the governance decision's JSON."""

    interrupt_id: str
    decision: Mapping[str, JsonValue]


class DirectiveJson(TypedDict):
    """The decisions of one resume."""

    approvals: Sequence[ApprovalJson]
    interrupts: Sequence[ResolutionJson]
