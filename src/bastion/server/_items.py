"""The pending items and usage a run view shows, built the same way for every kind of run."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ._models import PendingItem

if TYPE_CHECKING:
    from bastion.core import Usage

__all__ = ["call_item", "interrupt_item", "usage_view"]

_NOT_LIMIT = ("id", "reason", "tool_call_ids")


def call_item(
    run_id: str,
    tool_call_id: str,
    tool_name: str,
    arguments: Mapping[str, object],
    reason: str | None,
) -> PendingItem:
    """A tool call of run ``run_id`` that waits for approval."""
    return PendingItem(
        id=tool_call_id,
        kind="call",
        run_id=run_id,
        tool_name=tool_name,
        arguments=dict(arguments),
        reason=reason or "The tool needs approval.",
    )


def interrupt_item(run_id: str, flat: Mapping[str, object]) -> PendingItem:
    """A budget interrupt of run ``run_id``, from its flat (``to_dict``) form."""
    return PendingItem(
        id=str(flat.get("id", "")),
        kind="interrupt",
        run_id=run_id,
        reason=str(flat.get("reason") or "A limit was reached."),
        limit={k: v for k, v in flat.items() if k not in _NOT_LIMIT},
    )


def usage_view(usage: Usage) -> dict[str, object]:
    """The usage as the API shows it: every counter, by name."""
    return dataclasses.asdict(usage)
