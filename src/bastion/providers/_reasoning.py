"""Checks shared by the adapters when they send a :class:`ReasoningConfig`.

Each protocol spells reasoning its own way (the adapters' ``_payload`` modules do the
spelling); what they share is refusing, before anything is sent, a setting the protocol has
no field for, with a message that names it.
"""

from __future__ import annotations

from collections.abc import Collection

from bastion.core import ReasoningConfig, ReasoningEffort, UserError

__all__ = ["accepted_effort", "refuse_budget"]


def accepted_effort(
    config: ReasoningConfig, protocol: str, accepted: Collection[ReasoningEffort]
) -> ReasoningEffort | None:
    """``config.effort`` if ``protocol`` takes it (``None`` when unset).

    Raises:
        UserError: The protocol has no such level.
    """
    effort = config.effort
    if effort is not None and effort not in accepted:
        raise UserError(
            f"ReasoningConfig(effort={effort!r}) cannot be sent to {protocol}: "
            f"it takes {', '.join(accepted)}."
        )
    return effort


def refuse_budget(config: ReasoningConfig, protocol: str) -> None:
    """Raise when ``config`` sets a thinking budget ``protocol`` has no field for.

    Raises:
        UserError: ``budget_tokens`` is set.
    """
    if config.budget_tokens is not None:
        raise UserError(
            f"ReasoningConfig(budget_tokens={config.budget_tokens}) cannot be sent to "
            f"{protocol}: it has no thinking budget. Set effort instead."
        )
