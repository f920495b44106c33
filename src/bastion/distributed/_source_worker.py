"""The worker's side of tool sources: the listing activity and finding a source's tool."""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio import activity
from temporalio.exceptions import ApplicationError

from ._source_wire import PREFIX, describe, tools_adapter

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping, Sequence

    from bastion.tools import Tool, ToolSource

__all__ = ["find_tool", "source_activity"]


def source_activity(name: str, sources: Sequence[ToolSource]) -> Callable[[str], Awaitable[str]]:
    """The activity that lists one of the worker's sources and describes its tools."""
    by_name = {s.name: s for s in sources}

    @activity.defn(name=name)
    async def list_source(source_name: str) -> str:
        try:
            tools = await by_name[source_name].list_tools()
        except Exception as error:  # the listing's failure, typed and named, for the workflow
            raise ApplicationError(
                str(error), type=type(error).__name__, non_retryable=True
            ) from error
        return tools_adapter().dump_json([describe(t) for t in tools]).decode()

    return list_source


async def find_tool(tools: Mapping[str, Tool], sources: Sequence[ToolSource], name: str) -> Tool:
    """The worker's tool called ``name``: the agent's own, or ``source:<source>:<tool>``."""
    if not name.startswith(PREFIX) or name in tools:
        return tools[name]
    source_name, _, tool_name = name.removeprefix(PREFIX).partition(":")
    for source in sources:
        if source.name == source_name:
            for tool in await source.list_tools():
                if tool.name == tool_name:
                    return tool
    raise ApplicationError(
        f"The worker's source {source_name!r} has no tool {tool_name!r} now.",
        type="ToolError",
        non_retryable=True,
    )
