"""``ToolSource``: tools an agent asks for at run time, not at construction.

An MCP server is the first source: its tools are known only once the server started, and
its list may change while the agent lives (``tools/list_changed``). ``Agent(tools=[...])``
accepts sources beside tools; the run loop asks each source for its current list before
every model call and the agent's registry replaces the source's group when the returned
tuple is a new one. Keeping the seam this small (one protocol, asked per step) is what lets
the agent core change without touching the sources.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

from ._tool import Tool

__all__ = ["ToolSource"]


@runtime_checkable
class ToolSource(Protocol):
    """A provider of tools whose list is fetched (and may change) at run time.

    Attributes:
        name: Identifies the source in errors, events and prefixed tool names.
    """

    name: str

    async def list_tools(self) -> Sequence[Tool]:
        """The source's current tools.

        Called before every model call, so it must be cheap when nothing changed: return
        the *same* sequence object until the list changes (the agent compares identity).

        Raises:
            Exception: Discovery failed; the run goes on without this source's tools
                (the agent reports a ``tool.source.error`` event).
        """
        ...

    async def aclose(self) -> None:
        """Release what the source holds (processes, connections); it may start again."""
        ...
