"""An agent's tool sources (MCP servers, ...): asked for their tools before each model call.

``Agent`` keeps its sources here; the run loop calls :meth:`ToolSources.refresh` before
every step. A source returns the same sequence while its list is unchanged, so the common
case costs one ``await`` and an identity test per source. A new list replaces the source's
group in the agent's registry (collisions are resolved there); a failed listing keeps the
last good list and becomes one ``tool.source.error`` event per run and source.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from bastion.core import ToolSourceErrorEvent, UserError
from bastion.tools import Tool, ToolRegistry, ToolSource

__all__ = ["ToolSources", "split_sources"]


def split_sources(
    items: Sequence[Tool | Callable[..., object] | ToolSource], owner: str
) -> tuple[list[Tool | Callable[..., object]], tuple[ToolSource, ...]]:
    """Separate tool sources from tools and functions; source names must be unique.

    Raises:
        UserError: Two sources share a name.
    """
    tools: list[Tool | Callable[..., object]] = []
    sources: list[ToolSource] = []
    for item in items:
        if not isinstance(item, Tool) and isinstance(item, ToolSource):
            sources.append(item)
        else:
            tools.append(item)
    names = [s.name for s in sources]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UserError(
            f"{owner}: two tool sources are named {duplicates[0]!r}; give each MCP server "
            "its own name (MCPServer.stdio(..., name='...'))."
        )
    return tools, tuple(sources)


class ToolSources:
    """The sources of one agent and the list each returned last.

    Args:
        sources: The sources, in the agent's ``tools=`` order.
        registry: The agent's registry; each source owns the group ``source:<name>``.
    """

    __slots__ = ("_listed", "_registry", "sources")

    def __init__(self, sources: tuple[ToolSource, ...], registry: ToolRegistry) -> None:
        self.sources = sources
        self._registry = registry
        self._listed: dict[str, Sequence[Tool]] = {}

    async def refresh(self, run_id: str, reported: set[str]) -> list[ToolSourceErrorEvent]:
        """Ask every source for its tools and register the lists that changed.

        Args:
            run_id: The run asking (for the events).
            reported: Names of sources whose failure this run already reported.

        Returns:
            One ``tool.source.error`` per source that failed for the first time in the run.
        """
        events: list[ToolSourceErrorEvent] = []
        for source in self.sources:
            try:
                tools = await source.list_tools()
                if self._listed.get(source.name) is not tools:
                    self._registry.set_source(f"source:{source.name}", tools)
                    self._listed[source.name] = tools
            except Exception as exc:  # a broken server must not fail the run
                if source.name not in reported:
                    reported.add(source.name)
                    events.append(
                        ToolSourceErrorEvent(
                            run_id=run_id,
                            source=source.name,
                            message=f"{type(exc).__name__}: {exc}",
                        )
                    )
        return events

    async def aclose(self) -> None:
        """Close every source (each may start again on a later run)."""
        for source in self.sources:
            await source.aclose()
