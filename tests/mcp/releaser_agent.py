"""An agent for the CLI tests: it releases through the demo server, which asks questions."""

from __future__ import annotations

import sys
from pathlib import Path

from bastion import Agent
from bastion.core import ModelRequest, ToolMessage
from bastion.mcp import MCPServer
from bastion.testing import Call, FunctionModel, Turn

DEMO = str(Path(__file__).with_name("demo_server.py"))


def releaser() -> Agent[None, str]:
    """Calls ``release`` once, then reports what the tool said."""

    def turn(request: ModelRequest) -> Turn:
        results = [m for m in request.messages if isinstance(m, ToolMessage)]
        if not results:
            return Turn(tool_calls=[Call("release", {"version": "1.2"})])
        return Turn(text=f"Done: {results[-1].text}")

    server = MCPServer.stdio(sys.executable, [DEMO, "stdio"], name="demo")
    return Agent("releaser", model=FunctionModel(turn), tools=[server])
