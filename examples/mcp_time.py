"""An agent using a published MCP server (mcp-server-time) over stdio, offline.

Run: ``python examples/mcp_time.py`` (after ``make install``, which installs the server).
The model is scripted, so no API key is needed; swap in ``model="openai:gpt-4.1"`` to let
a real model choose the calls.
"""

import asyncio
import shutil
import sys
from pathlib import Path

from bastion import Agent
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn


def server_command() -> str:
    here = Path(sys.executable).parent / "mcp-server-time"  # the venv's script
    return str(here) if here.exists() else shutil.which("mcp-server-time") or "mcp-server-time"


async def main() -> None:
    time_server = MCPServer.stdio(
        server_command(),
        ["--local-timezone", "UTC"],
        name="time",
        side_effects={"*": "read_only"},  # it only reads the clock
        timeout=10,
    )
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("get_current_time", {"timezone": "Asia/Tokyo"})]),
            Turn(text="I asked the time server for Tokyo's time."),
        ]
    )
    async with Agent("clock", model=model, tools=[time_server]) as agent:
        async for event in agent.stream("What time is it in Tokyo?"):
            if event.type == "tool.execute.end":
                print(f"{event.tool_name} -> {event.result}")
            elif event.type == "agent.end":
                print(f"{event.status}: {event.output}")


if __name__ == "__main__":
    asyncio.run(main())
