"""MCP: use any MCP server's tools, resources and prompts from Bastion agents.

``MCPServer.stdio(...)`` / ``MCPServer.http(...)`` make a server a tool source:
``Agent(tools=[server])``. ``load_config`` reads the common ``mcpServers`` JSON. Needs the
``mcp`` extra (``pip install 'bastion[mcp]'``). ``serve_agent`` serves an agent over MCP.
"""

from ._config import load_config, servers_from_config
from ._connection import ConnectionLost
from ._options import ServerOptions
from ._serve import ServableAgent, ServesItself, agent_server, serve_agent
from ._server import DEFER_THRESHOLD, MCPServer
from ._transport import Transport

__all__ = [
    "ConnectionLost",
    "DEFER_THRESHOLD",
    "MCPServer",
    "ServableAgent",
    "ServesItself",
    "ServerOptions",
    "Transport",
    "agent_server",
    "load_config",
    "serve_agent",
    "servers_from_config",
]
