"""Least authority: what a sub-agent may do and use, as its parent grants it (``as_tool``).

``read_only`` leaves out every tool that may change something (a ``side_effecting`` or
``external_stateful`` side-effect class, or a tool of unknown class) and every handoff: they
are not shown to the child's model, and a call to one anyway (a fabricated call) is refused
with a ``capability_blocked`` tool error the model reads. The narrowing is a view of the
child's catalog, so tools registered later are narrowed too. :class:`SecretsGrant` says
which of the parent's secrets the child's tools may reveal.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias

from bastion.core import UserError
from bastion.tools import Tool, ToolSet

from ._catalog import ToolCatalog

if TYPE_CHECKING:
    from bastion.security import Vault

__all__ = [
    "CAPABILITIES",
    "SECRETS_MODES",
    "Capability",
    "ReadOnlyCatalog",
    "SecretsGrant",
    "SecretsMode",
    "is_writer",
    "narrowed",
]

Capability: TypeAlias = Literal["full", "read_only"]
CAPABILITIES: tuple[str, ...] = ("full", "read_only")
_READERS = frozenset({"pure", "read_only"})

# Handoffs are tools too; at merge, the handoffs package adds its predicate here so a
# read-only child is offered none (``handoff_of(tool) is not None``).
HANDOFF_CHECKS: list[Callable[[Tool], bool]] = []


def is_writer(tool: Tool) -> bool:
    """Whether a read-only agent may not use ``tool``: it may change something, or hands off."""
    if tool.side_effect_class not in _READERS:
        return True
    return any(check(tool) for check in HANDOFF_CHECKS)


class ReadOnlyCatalog(ToolCatalog):
    """The tool sets of a catalog without the tools that write (see :func:`is_writer`)."""

    __slots__ = ("_inner", "_seen", "_view")

    def __init__(self, inner: ToolCatalog) -> None:  # pyright: ignore[reportMissingSuperCall]
        self.registry = inner.registry
        self._inner = inner
        self._seen: ToolSet | None = None
        self._view: ToolSet | None = None

    def current(self) -> ToolSet:
        """The inner catalog's current set, narrowed (built once per set)."""
        tools = self._inner.current()
        view = self._view
        if view is None or tools is not self._seen:
            view = self._view = narrowed(tools)
            self._seen = tools
        return view


def narrowed(tools: ToolSet) -> ToolSet:
    """``tools`` as a read-only agent sees them."""
    blocked = frozenset(name for name, tool in tools.by_name.items() if is_writer(tool))
    if not blocked:
        return tools
    return ToolSet(
        by_name=tools.by_name,
        advertised=tuple(d for d in tools.advertised if d.name not in blocked),
        deferred=MappingProxyType({n: d for n, d in tools.deferred.items() if n not in blocked}),
        search=tools.search,
        version=tools.version,
        blocked=blocked,
    )


SecretsMode: TypeAlias = Literal["inherit_allowlist", "forward_explicit", "isolated"]
SECRETS_MODES: tuple[str, ...] = ("inherit_allowlist", "forward_explicit", "isolated")


@dataclass(frozen=True, kw_only=True, slots=True)
class SecretsGrant:
    """The parent's secrets a sub-agent gets (``as_tool(secrets=..., inherit_secrets=...)``).

    ``inherit_allowlist``: the parent's vault limited to ``names`` (live: a rotated secret
    is seen); no names, nothing. ``forward_explicit``: the values of ``names`` as they are
    when the sub-agent starts. ``isolated``: nothing of the parent's. In every mode the
    child keeps its own vault when it has one and is granted nothing.
    """

    mode: SecretsMode = "inherit_allowlist"
    names: tuple[str, ...] = ()

    def vault_for(self, parent: Vault | None, own: Vault | None) -> Vault | None:
        """The child's vault under a parent whose vault is ``parent``.

        Raises:
            UserError: A granted name is not in the parent's vault.
        """
        if self.mode == "isolated" or not self.names:
            return own
        if parent is None:
            raise UserError(
                f"The parent grants secret(s) {list(self.names)} to a sub-agent, but has no "
                "vault: give the parent Agent(security=SecurityConfig(vault=Vault(...)))."
            )
        if self.mode == "forward_explicit":
            return parent.snapshot(self.names)
        return parent.subset(self.names)
