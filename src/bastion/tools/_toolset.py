"""``ToolSet``: an agent's tools at one moment, as the model sees and the executor runs them.

A tool set is frozen. Registering a tool (``agent.registry.register``) or a tool source's new
list makes a *new* set; a run reads one set per step, so the definitions sent to the model
and the tools the executor may run always come from the same set.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType

from bastion.core import ToolDefinition

from ._search import TOOL_SEARCH, Embedder, tool_search_tool
from ._tool import Tool

__all__ = ["ToolSet", "build_toolset"]

_EMPTY: Mapping[str, ToolDefinition] = MappingProxyType({})


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSet:
    """The tools of one agent at one moment; read-only.

    Attributes:
        by_name: Every tool the executor may run, by name (including ``tool_search``).
        advertised: What the model is shown on every step (not the deferred tools).
        deferred: Definitions of deferred tools, shown once ``tool_search`` found them.
        search: The built-in ``tool_search`` over the deferred tools (``None``: none).
        version: The registry version the set was made from.
        blocked: Tools the run may not use (a read-only sub-agent's writers): not shown,
            and a call to one is refused with ``capability_blocked``.
    """

    by_name: Mapping[str, Tool]
    advertised: tuple[ToolDefinition, ...]
    deferred: Mapping[str, ToolDefinition] = field(default_factory=lambda: _EMPTY)
    search: Tool | None = None
    version: int = 0
    blocked: frozenset[str] = frozenset()

    def definitions(self, promoted: Collection[str]) -> tuple[ToolDefinition, ...]:
        """What the model is shown, given the deferred tools a search promoted."""
        if not promoted or not self.deferred:
            return self.advertised  # the common case: no copy
        deferred = self.deferred
        return self.advertised + tuple(deferred[n] for n in promoted if n in deferred)


def build_toolset(
    tools: Mapping[str, Tool],
    *,
    version: int,
    embedder: Embedder | None = None,
    previous: ToolSet | None = None,
    advertise: Collection[Tool] | None = None,
) -> ToolSet:
    """A tool set over ``tools``: ``tool_search`` joins it when any tool is deferred.

    Only the built-in search is made here; a tool of the user's named ``tool_search`` is
    kept as it is. ``advertise`` replaces what the model is shown (code mode shows only its
    own tools). ``previous`` lends its search when the deferred tools did not change.
    """
    deferred = [t for n, t in tools.items() if t.defer_loading and n != TOOL_SEARCH]
    by_name = dict(tools)
    search = None
    if deferred and TOOL_SEARCH not in tools:
        search = _search_over(deferred, embedder, previous)
        by_name[TOOL_SEARCH] = search
    shown = advertise
    if shown is None:
        shown = [t for t in by_name.values() if not t.defer_loading]
    return ToolSet(
        by_name=MappingProxyType(by_name),
        advertised=tuple(t.definition() for t in shown),
        deferred=MappingProxyType({t.name: _promoted_definition(t) for t in deferred}),
        search=search,
        version=version,
    )


def _search_over(deferred: list[Tool], embedder: Embedder | None, previous: ToolSet | None) -> Tool:
    if (
        previous is not None
        and previous.search is not None
        and list(previous.deferred) == [t.name for t in deferred]
        and all(previous.by_name.get(t.name) is t for t in deferred)
    ):
        return previous.search  # same deferred tools: the index built so far is kept
    return tool_search_tool(deferred, embedder=embedder)


def _promoted_definition(t: Tool) -> ToolDefinition:
    """A deferred tool as advertised once promoted: without its worked examples."""
    return ToolDefinition(
        name=t.name, description=t.description, parameters=t.parameters, strict=t.strict
    )
