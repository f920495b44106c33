"""Serve a Bastion agent as an MCP server, so any MCP client can call it.

The agent becomes one tool (named after the agent) taking ``input``; each call is one run.
Its tool calls are reported as MCP progress notifications while it runs; a run that does
not complete (failed, stopped, suspended for a human) is an ``isError`` result naming why.
``bastion mcp serve app.py:agent [--http]`` runs it from the shell. Anything that builds its
own server (``mcp_server(tool_name=...)``, as ``bastion.graph.Graph`` does) is served as it says.
"""

from __future__ import annotations

import json
import re
from typing import TYPE_CHECKING, Any, Literal, Protocol, runtime_checkable

from bastion.core import UserError

if TYPE_CHECKING:
    from mcp.server import MCPServer as SDKServer

__all__ = ["ServableAgent", "ServesItself", "agent_server", "serve_agent"]

_NOT_NAME = re.compile(r"[^A-Za-z0-9_-]")


class ServableAgent(Protocol):
    """What serving needs of an agent (``bastion.Agent`` has it)."""

    @property
    def name(self) -> str:
        """The agent's name (the tool's name by default)."""
        ...

    @property
    def description(self) -> str:
        """What the agent does (the tool's description)."""
        ...

    def stream(self, input: str, /) -> Any:
        """Start a run; an async iterator of events with ``.result`` at the end."""
        ...


@runtime_checkable
class ServesItself(Protocol):
    """Something that builds its own MCP server (``bastion.graph.Graph`` does)."""

    def mcp_server(self, *, tool_name: str | None = None) -> SDKServer:
        """An SDK ``MCPServer`` exposing it as one tool."""
        ...


def agent_server(agent: ServableAgent | ServesItself, *, tool_name: str | None = None) -> SDKServer:
    """An SDK ``MCPServer`` exposing ``agent`` (or a graph) as one tool.

    Args:
        agent: The agent (any object with ``name``, ``description`` and ``stream``), or a
            ``Graph`` (anything with ``mcp_server``: it builds its own).
        tool_name: The tool's name (default: the agent's name, made a valid tool name).

    Raises:
        UserError: The tool name is not a valid MCP tool name.
    """
    if isinstance(agent, ServesItself):
        return agent.mcp_server(tool_name=tool_name)
    from mcp.server import MCPServer as SDKServer
    from mcp.server.mcpserver import Context
    from mcp.server.mcpserver.exceptions import ToolError

    name = tool_name or _NOT_NAME.sub("_", agent.name) or "agent"
    if not re.fullmatch(r"[A-Za-z0-9_.-]{1,128}", name):
        raise UserError(f"Invalid MCP tool name {name!r}: use 1-128 letters, digits, '_-.'.")
    server = SDKServer(agent.name, instructions=agent.description or None, log_level="WARNING")

    async def run_agent(input: str, ctx: Context) -> str:
        stream = agent.stream(input)
        calls = 0
        async for event in stream:
            if event.type == "tool.execute.start":
                calls += 1
                await ctx.report_progress(calls, None, f"calling {event.tool_name}")
        result = stream.result
        if result.status == "completed":
            output = result.output
            return output if isinstance(output, str) else json.dumps(output, default=str)
        if result.status == "awaiting_approval":
            raise ToolError(
                f"Run {result.run_id} of agent {agent.name!r} waits for a human decision on "
                f"{len(result.pending_approvals)} tool call(s); decide it where it is journaled "
                "(bastion runs resume)."
            )
        detail = result.error.message if result.error is not None else result.status
        raise ToolError(f"Run {result.run_id} of agent {agent.name!r} {result.status}: {detail}")

    # The SDK reads the signature's annotations; with postponed evaluation they are strings
    # naming a type imported in this function, so give it the objects.
    run_agent.__annotations__ = {"input": str, "ctx": Context, "return": str}
    server.add_tool(
        run_agent,
        name=name,
        description=agent.description
        or f"Ask the agent {agent.name!r}; give it the task as input.",
    )
    return server


def serve_agent(
    agent: ServableAgent | ServesItself,
    *,
    transport: Literal["stdio", "http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8000,
    tool_name: str | None = None,
) -> None:
    """Serve ``agent`` (or a graph) over MCP until the process is stopped (blocking).

    ``stdio`` speaks on this process's stdin/stdout (for a client that starts it);
    ``http`` is streamable HTTP at ``http://<host>:<port>/mcp``.

    Raises:
        UserError: An unknown transport or an invalid tool name.
    """
    if transport not in ("stdio", "http"):
        raise UserError(f"transport must be 'stdio' or 'http', got {transport!r}.")
    server = agent_server(agent, tool_name=tool_name)
    if transport == "stdio":
        server.run()
    else:
        server.run(transport="streamable-http", host=host, port=port)
