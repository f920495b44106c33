"""An MCP server with a large catalogue (``python catalogue_server.py N``), over stdio.

Built on the SDK's low-level ``Server`` so that listing N tools costs the protocol, not
the per-function model building of ``MCPServer``. Lists in pages of 1,000 (pagination).
Tool ``tool_<i>`` adds ``i`` to ``x``.
"""

from __future__ import annotations

import sys
from typing import Any

import anyio
from mcp import types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server

PAGE = 1000
COUNT = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
SCHEMA = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}
TOOLS = [
    types.Tool(
        name=f"tool_{i:05d}",
        description=f"Generated tool number {i}: adds {i}.",
        input_schema=SCHEMA,
    )
    for i in range(COUNT)
]


async def list_tools(
    ctx: Any, params: types.PaginatedRequestParams | None
) -> types.ListToolsResult:
    start = int(params.cursor) if params is not None and params.cursor else 0
    end = start + PAGE
    return types.ListToolsResult(
        tools=TOOLS[start:end], next_cursor=str(end) if end < len(TOOLS) else None
    )


async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    number = int(params.name.removeprefix("tool_"))
    total = int((params.arguments or {})["x"]) + number
    return types.CallToolResult(
        content=[types.TextContent(type="text", text=str(total))],
        structured_content={"result": total},
    )


server = Server("catalogue", on_list_tools=list_tools, on_call_tool=call_tool)


async def main() -> None:
    async with stdio_server() as (read, write):
        await server.run(read, write, server.create_initialization_options())


if __name__ == "__main__":
    anyio.run(main)
