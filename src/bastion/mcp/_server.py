"""``MCPServer``: an MCP server as a tool source of agents, started lazily, shared, restarted.

An agent asks the server for its tools before every model call (``ToolSource``); the first
ask starts the server (a subprocess, or an HTTP session) and lists its tools, later asks
return the cached tuple until the server says ``tools/list_changed`` or was restarted.
Every run of the agent shares the one connection (``_connection.py``), which a server that
died is replaced by at the next call. Each tool call is governed as
``tool:<server>:<tool>`` and its output is untrusted (trust class ``mcp_derived``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bastion.core import UserError

from ._naming import check_url, stdio_name, url_name
from ._options import ServerOptions
from ._tools import DEFER_THRESHOLD, ServerTools
from ._transport import InProcessServer, Transport

__all__ = ["DEFER_THRESHOLD", "MCPServer"]


class MCPServer(ServerTools):
    """One MCP server, used as tools by agents: ``Agent(tools=[MCPServer.stdio(...)])``.

    Build one with :meth:`stdio`, :meth:`http`, :meth:`sse`, :meth:`in_process` or
    :func:`bastion.mcp.load_config`. Nothing starts until a run (or a direct call such
    as :meth:`call_tool`) needs the server; :meth:`aclose` (or closing the agent) stops it.

    Args:
        transport: Where the server is.
        options: How its tools are exposed and called (:class:`ServerOptions`).
    """

    @classmethod
    def stdio(
        cls,
        command: str,
        args: Sequence[str] = (),
        *,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        name: str | None = None,
        **options: object,
    ) -> MCPServer:
        """A server run as a subprocess speaking MCP over its stdin and stdout.

        Args:
            command: The program (``"uvx"``, ``"npx"``, ``"mcp-server-time"``, ...).
            args: Its arguments.
            env: Variables added to the inherited environment.
            cwd: The working directory.
            name: The server's name (default: derived from the command line).
            **options: The fields of :class:`ServerOptions` (``timeout``, ...).

        Raises:
            UserError: An empty command, or invalid options.
        """
        if not isinstance(command, str) or not command.strip():
            raise UserError(f"MCPServer.stdio needs a command, got {command!r}.")
        if isinstance(args, str):
            raise UserError(f"MCPServer.stdio: args must be a list of strings, got {args!r}.")
        transport = Transport(
            kind="stdio", command=command, args=tuple(args), env=dict(env or {}), cwd=cwd
        )
        return cls(transport, ServerOptions.build(name or stdio_name(command, args), options))

    @classmethod
    def http(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        **options: object,
    ) -> MCPServer:
        """A server reached over streamable HTTP (the current MCP HTTP transport).

        Args:
            url: The endpoint, e.g. ``"http://127.0.0.1:8000/mcp"``.
            headers: Sent with every request (``{"Authorization": "Bearer ..."}``).
            name: The server's name (default: the URL's host).
            **options: The fields of :class:`ServerOptions`.

        Raises:
            UserError: The URL is not http(s), or invalid options.
        """
        return cls(
            Transport(kind="http", url=check_url(url), headers=dict(headers or {})),
            ServerOptions.build(name or url_name(url), options),
        )

    @classmethod
    def sse(
        cls,
        url: str,
        *,
        headers: Mapping[str, str] | None = None,
        name: str | None = None,
        **options: object,
    ) -> MCPServer:
        """A server reached over the legacy HTTP+SSE transport (older servers only)."""
        return cls(
            Transport(kind="sse", url=check_url(url), headers=dict(headers or {})),
            ServerOptions.build(name or url_name(url), options),
        )

    @classmethod
    def in_process(
        cls, server: InProcessServer, *, name: str | None = None, **options: object
    ) -> MCPServer:
        """A server object of the ``mcp`` SDK (``mcp.server.MCPServer``) in this process.

        No transport at all: for tests, and for wrapping Python MCP servers you own.
        """
        default = getattr(server, "name", None)
        label = name or (default if isinstance(default, str) else "in_process")
        return cls(Transport(kind="memory", server=server), ServerOptions.build(label, options))

    def __repr__(self) -> str:
        return f"MCPServer({self.name!r}, {self.transport.kind}: {self.transport.describe()!r})"
