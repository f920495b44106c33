"""The tool form of a team or an external agent (``Team.as_tool``, ``ExternalAgent.as_tool``)."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Protocol

from bastion.tools import tool

if TYPE_CHECKING:
    from bastion.tools import SideEffectClass, Tool

__all__ = ["own_tool"]


class _Described(Protocol):
    """An agent-like with a name and a description (a team, an external agent)."""

    @property
    def name(self) -> str:
        """Its name: the tool's by default."""
        ...

    @property
    def description(self) -> str:
        """What it does: the tool's description by default."""
        ...


def own_tool(  # noqa: PLR0917 - one tool's parts
    owner: _Described,
    call: Callable[..., Awaitable[str]],
    name: str | None,
    description: str | None,
    noun: str,
    side_effect_class: SideEffectClass,
) -> Tool:
    """``call`` as the tool of ``owner`` (a ``noun``), named and described after it by default."""
    return tool(
        call,
        name=name or owner.name,
        description=description or owner.description or f"Ask the {noun} {owner.name!r}.",
        side_effect_class=side_effect_class,
    )
