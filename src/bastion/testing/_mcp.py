"""``fake_mcp_server``: a real MCP server in this process, made of plain functions.

For users' own tests of agents that use MCP servers: the server speaks the whole protocol
(listing, calls, structured content, errors, progress, resources, prompts) through the
SDK's in-memory transport, so nothing is mocked and no process is started.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bastion.mcp import MCPServer

__all__ = ["fake_mcp_server"]


def fake_mcp_server(
    *tools: Callable[..., Any],
    name: str = "fake",
    resource_texts: Mapping[str, str] | None = None,
    prompt_texts: Mapping[str, str] | None = None,
    **options: Any,
) -> MCPServer:
    """An MCP server serving ``tools`` in this process, as an agent's tool source.

    Example::

        def lookup(city: str) -> str:
            "Look up a city."
            return f"{city}: 12 C"

        agent = Agent("a", model=ScriptedModel([...]), tools=[fake_mcp_server(lookup)])

    Args:
        *tools: Functions (sync or async) with type hints; their docstrings describe them.
            A function may take an ``mcp.server.mcpserver.Context`` to report progress.
            Raising ``mcp.server.mcpserver.exceptions.ToolError`` returns an ``isError``
            result.
        name: The server's name (governance keys are ``tool:<name>:<tool>``).
        resource_texts: Text resources by URI (``{"notes://today": "..."}``).
        prompt_texts: Prompt texts by name (no arguments).
        **options: Options of :class:`bastion.mcp.ServerOptions` (``timeout``,
            ``resources=True`` to expose the resources as tools, ...).
    """
    from mcp.server import MCPServer as SDKServer

    server = SDKServer(name, log_level="WARNING")
    for function in tools:
        server.add_tool(function)
    for uri, text in (resource_texts or {}).items():
        server.resource(uri, mime_type="text/plain")(_constant(text, uri))
    for prompt, text in (prompt_texts or {}).items():
        server.prompt(name=prompt)(_constant(text, prompt))
    return MCPServer.in_process(server, name=name, **options)


def _constant(text: str, label: str) -> Callable[[], str]:
    def value() -> str:
        return text

    value.__name__ = "".join(c if c.isalnum() else "_" for c in label) or "value"
    value.__doc__ = f"{label}."
    return value
