"""``ToolCatalog``: turns an agent's registry into frozen tool sets, one per registry change.

The registry is where tools are added while the agent lives (``agent.registry.register``,
a tool source's new list). The catalog is the only reader of it: each change of the
registry's version yields a new :class:`~bastion.tools.ToolSet`, and a run takes the current
set at the start of each step, for both what its model is shown and what its executor runs.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion.tools import Embedder, Tool, ToolRegistry, ToolSet, build_toolset

if TYPE_CHECKING:
    from collections.abc import Sequence

__all__ = ["ToolCatalog"]


class ToolCatalog:
    """The agent's tool sets, made from its registry (a new one after every change).

    Args:
        registry: The agent's registry.
        embedder: The semantic backend of the built-in ``tool_search``.
        advertise: What the model is shown instead of the tools (code mode's two tools).
    """

    __slots__ = ("_advertise", "_current", "_embedder", "registry")

    def __init__(
        self,
        registry: ToolRegistry,
        *,
        embedder: Embedder | None = None,
        advertise: Sequence[Tool] | None = None,
    ) -> None:
        self.registry = registry
        self._embedder = embedder
        self._advertise = None if advertise is None else tuple(advertise)
        self._current = self._build(None)

    def current(self) -> ToolSet:
        """The tool set of the registry as it is now (the same object while it is unchanged)."""
        current = self._current
        if current.version != self.registry.version:
            current = self._current = self._build(current)
        return current

    def _build(self, previous: ToolSet | None) -> ToolSet:
        registry = self.registry
        return build_toolset(
            registry,
            version=registry.version,
            embedder=self._embedder,
            previous=previous,
            advertise=self._advertise,
        )
