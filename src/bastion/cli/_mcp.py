"""``bastion mcp list|tools|call|serve``: inspect MCP servers, or serve an agent or graph as one.

Servers come from an ``mcpServers`` JSON file (``--config``, else ``$BASTION_MCP_CONFIG``,
else ``./.mcp.json``), or one ad-hoc server: ``--stdio "uvx mcp-server-time"`` or
``--url https://host/mcp``. Exit codes: 0 done, 1 the tool answered with an error or the
server failed, 2 the command was used wrongly (unknown server, arguments not JSON).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
from collections.abc import Callable, Coroutine, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, TypedDict, TypeVar

import typer
from rich.table import Table

from bastion.core import JsonValue, UserError
from bastion.mcp import ConnectionLost, MCPServer, load_config, serve_agent
from bastion.mcp._convert import render_content
from bastion.tools import ToolError

if TYPE_CHECKING:
    from mcp.server import MCPServer as SDKServer
    from mcp.types import CallToolResult

    from bastion import Agent
    from bastion.graph import Graph

from bastion.graph import Graph, StoreCheckpointer

from ._common import (
    EXIT_FAILED_RUN,
    EXIT_USAGE,
    command_group,
    console,
    default_store_url,
    error,
    or_exit,
    value_option,
)
from ._load import load_agent_or_graph

__all__ = ["CONFIG_ENV", "mcp_app"]

CONFIG_ENV = "BASTION_MCP_CONFIG"
_DEFAULT_CONFIG = ".mcp.json"
_T = TypeVar("_T")


class _ToolRow(TypedDict):
    """One tool of ``bastion mcp tools`` (a JSON object with ``--json``)."""

    name: str
    description: str
    input_schema: Mapping[str, JsonValue]
    side_effect_class: str | None


mcp_app = command_group(
    "mcp", "MCP servers: list those configured, list a server's tools, call a tool."
)

_CONFIG = value_option(
    "--config",
    "FILE",
    f"An mcpServers JSON file (default: ${CONFIG_ENV}, else ./{_DEFAULT_CONFIG}).",
)
_STDIO = value_option("--stdio", "COMMAND", "An ad-hoc stdio server: its command line.")
_URL = value_option("--url", "URL", "An ad-hoc streamable HTTP server.")
_JSON = typer.Option("--json", help="Print JSON instead of a table.")


@mcp_app.command("list")
def list_servers(config: Annotated[str | None, _CONFIG] = None) -> None:
    """List the servers of the configuration file."""
    servers = _load(config)
    table = Table("server", "transport", "target", box=None, pad_edge=False)
    for name, server in servers.items():
        table.add_row(name, server.transport.kind, server.transport.describe())
    console(plain=True).print(table)


@mcp_app.command("tools")
def list_tools(
    server: Annotated[
        str | None, typer.Argument(help="A server of the config.", show_default=False)
    ] = None,
    config: Annotated[str | None, _CONFIG] = None,
    stdio: Annotated[str | None, _STDIO] = None,
    url: Annotated[str | None, _URL] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """List a server's tools: name, side-effect class, description."""
    chosen = _server(server, config, stdio, url)

    async def go() -> list[_ToolRow]:
        async with chosen:
            wire = await chosen.describe_tools()
            tools = {t.name: t for t in await chosen.list_tools()}
        return [
            {
                "name": t.name,
                "description": t.description or "",
                "input_schema": t.input_schema,
                "side_effect_class": tools[t.name].side_effect_class if t.name in tools else None,
            }
            for t in wire
        ]

    listed = _run(go)
    if as_json:
        typer.echo(json.dumps(listed, indent=2))
        return
    table = Table("tool", "side effects", "description", box=None, pad_edge=False)
    for item in listed:
        first = (item["description"].strip().splitlines() or [""])[0]
        table.add_row(item["name"], item["side_effect_class"] or "hidden", first)
    console(plain=True).print(table)


@mcp_app.command("call")
def call_tool(  # noqa: PLR0917 (typer options)
    server: Annotated[str, typer.Argument(help="A server of the config ('-' with --stdio/--url).")],
    tool: Annotated[str, typer.Argument(help="The tool's name on the server.")],
    arguments: Annotated[
        str, typer.Argument(help="The arguments as a JSON object.", show_default=False)
    ] = "{}",
    config: Annotated[str | None, _CONFIG] = None,
    stdio: Annotated[str | None, _STDIO] = None,
    url: Annotated[str | None, _URL] = None,
    as_json: Annotated[bool, _JSON] = False,
) -> None:
    """Call one tool and print its result (structured content as JSON when there is some)."""
    try:
        parsed: JsonValue = json.loads(arguments)
    except ValueError as exc:
        error(f'ARGUMENTS is not JSON: {exc}. Example: \'{{"timezone": "UTC"}}\'.')
        raise typer.Exit(EXIT_USAGE) from None
    if not isinstance(parsed, dict):
        error(f"ARGUMENTS must be a JSON object, got {arguments!r}.")
        raise typer.Exit(EXIT_USAGE)
    chosen = _server(None if server == "-" else server, config, stdio, url)
    values = parsed

    async def go() -> CallToolResult:
        async with chosen:
            return await chosen.call_tool(tool, values)

    result = _run(go)
    if as_json:
        typer.echo(result.model_dump_json(by_alias=True, exclude_none=True, indent=2))
    elif result.structured_content is not None:
        typer.echo(json.dumps(result.structured_content, indent=2))
    else:
        typer.echo(render_content(chosen.name, result.content)[0])
    if result.is_error:
        raise typer.Exit(EXIT_FAILED_RUN)


def _load(config: str | None) -> dict[str, MCPServer]:
    path = config or os.environ.get(CONFIG_ENV) or _DEFAULT_CONFIG
    if config is None and not Path(path).exists():
        error(
            f"No MCP config: give --config FILE, set ${CONFIG_ENV}, or create ./{_DEFAULT_CONFIG}."
        )
        raise typer.Exit(EXIT_USAGE)
    try:
        return load_config(path)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


def _server(name: str | None, config: str | None, stdio: str | None, url: str | None) -> MCPServer:
    try:
        if stdio is not None and url is not None:
            raise UserError("Give --stdio or --url, not both.")
        if stdio is not None:
            words = shlex.split(stdio)
            if not words:
                raise UserError("--stdio needs a command line.")
            return MCPServer.stdio(words[0], words[1:])
        if url is not None:
            return MCPServer.http(url)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    servers = _load(config)
    if name is None or name not in servers:
        known = ", ".join(repr(n) for n in servers) or "none"
        what = f"Unknown MCP server {name!r}" if name else "Name a server"
        error(f"{what}. Configured: {known} (or use --stdio / --url).")
        raise typer.Exit(EXIT_USAGE)
    return servers[name]


def _run(work: Callable[[], Coroutine[object, None, _T]]) -> _T:
    """Run ``work``; a server that fails prints one line and exits 1 (2 for misuse)."""
    try:
        return asyncio.run(work())
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    except (ConnectionLost, ToolError, TimeoutError, OSError) as exc:
        error(str(exc) or type(exc).__name__)
        raise typer.Exit(EXIT_FAILED_RUN) from None
    except Exception as exc:  # an MCP protocol error: one line, no traceback
        from mcp.shared.exceptions import MCPError

        if isinstance(exc, MCPError):
            error(f"MCP error: {exc.message}")
            raise typer.Exit(EXIT_FAILED_RUN) from None
        raise


@mcp_app.command("serve")
def serve(
    agent: Annotated[
        str, typer.Argument(help="The agent or graph: module:attr or path/to/file.py:attr.")
    ],
    http: Annotated[bool, typer.Option("--http", help="Streamable HTTP instead of stdio.")] = False,
    host: Annotated[str, typer.Option("--host", help="HTTP host.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="HTTP port.")] = 8000,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="A graph's checkpoints (default: the graph's own, else $BASTION_STORE, "
            "else sqlite:///.bastion/bastion.db).",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve an agent or a graph as an MCP server (one tool, named after it)."""
    loaded = or_exit(lambda: _servable(agent, store))
    try:
        serve_agent(loaded, transport="http" if http else "stdio", host=host, port=port)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


@dataclass(frozen=True, slots=True)
class _ServedGraph:
    """A graph to serve, with where it came from and the store its executions go to."""

    graph: Graph
    source: str
    store: str | None

    def mcp_server(self, *, tool_name: str | None = None) -> SDKServer:
        return self.graph.mcp_server(tool_name=tool_name, source=self.source, store=self.store)


def _servable(spec: str, store: str | None) -> Agent[object, object] | _ServedGraph:
    """The agent ``spec`` names, or its graph (checkpointed as ``bastion graph run`` does)."""
    made = load_agent_or_graph(spec)
    if not isinstance(made, Graph):
        return made
    own = store is None and isinstance(made.checkpointer, StoreCheckpointer)
    return _ServedGraph(made, spec, None if own else store or default_store_url())
