"""Least authority: what a sub-agent may do and use, as its parent grants it (``as_tool``).

``read_only`` leaves out every tool that may change something (a ``side_effecting`` or
``external_stateful`` side-effect class, or a tool of unknown class) and every handoff: they
are not shown to the child's model, and a call to one anyway (a fabricated call) is refused
with a ``capability_blocked`` tool error the model reads. The narrowing is a view of the
child's catalog, so tools registered later are narrowed too. :func:`granted_vault` says
which of the parent's secrets the child's tools may reveal (the vault's
``SecretInheritance``, under the mode names of ``as_tool``).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Literal, TypeAlias

from bastion.core import UserError
from bastion.tools import Tool, ToolSet

from ._catalog import ToolCatalog
from ._handoffs import handoff_of

if TYPE_CHECKING:
    from bastion.security import SecretInheritance, Vault

__all__ = [
    "CAPABILITIES",
    "SECRETS_MODES",
    "VAULT_MODES",
    "Capability",
    "ReadOnlyCatalog",
    "SecretsMode",
    "granted_vault",
    "is_writer",
    "narrowed",
    "narrowed_catalog",
]

Capability: TypeAlias = Literal["full", "read_only"]
CAPABILITIES: tuple[str, ...] = ("full", "read_only")
_READERS = frozenset({"pure", "read_only"})


def is_writer(tool: Tool) -> bool:
    """Whether a read-only agent may not use ``tool``: it may change something, or hands off."""
    if tool.side_effect_class not in _READERS:
        return True
    return handoff_of(tool) is not None  # handoffs are tools too: a reader is offered none


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


def narrowed_catalog(owner: str, catalog: ToolCatalog, capability: Capability) -> ToolCatalog:
    """``catalog`` as an agent of ``capability`` sees it.

    Raises:
        UserError: An unknown capability.
    """
    if capability == "full":
        return catalog
    if capability == "read_only":
        return ReadOnlyCatalog(catalog)
    raise UserError(
        f"Agent {owner!r}: capability must be one of {', '.join(map(repr, CAPABILITIES))}, "
        f"got {capability!r}."
    )


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
# The vault's own names for the modes (``bastion.security.SecretInheritance``).
VAULT_MODES: Mapping[str, Literal["inherit", "forward", "isolated"]] = {
    "inherit_allowlist": "inherit",
    "forward_explicit": "forward",
    "isolated": "isolated",
}


def granted_vault(inheritance: SecretInheritance, parent: Vault | None, child: str) -> Vault | None:
    """The child's vault: what ``inheritance`` takes of the parent's vault ``parent``.

    Raises:
        UserError: It names secrets, and the parent has no vault to take them from.
    """
    if inheritance.names and inheritance.mode != "isolated" and parent is None:
        raise UserError(
            f"The parent grants secret(s) {list(inheritance.names)} to sub-agent {child!r}, "
            "but has no vault: give it Agent(security=SecurityConfig(vault=Vault(...)))."
        )
    return inheritance.child_vault(parent)
