"""A server with 10,000 tools: listed once, deferred behind tool_search."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from bastion import Agent
from bastion.core import ToolMessage
from bastion.mcp import DEFER_THRESHOLD, MCPServer
from bastion.testing import Call, ScriptedModel, Turn

Make = Callable[..., MCPServer]
CATALOGUE = str(Path(__file__).with_name("catalogue_server.py"))


@pytest.mark.timeout(300)  # listing 10,000 tools over stdio takes seconds on a loaded machine
async def test_ten_thousand_tools_are_deferred_and_found_by_tool_search():
    server = MCPServer.stdio(sys.executable, [CATALOGUE, "10000"], name="catalogue")
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "generated tool number 4242"})]),
            Turn(tool_calls=[Call("tool_04242", {"x": 1})]),
            Turn(text="4243"),
        ]
    )
    async with Agent("big", model=model, tools=[server]) as agent:
        result = await agent.run("add 4242 to 1")
        assert len(agent.registry) > 10_000
    first = {d.name for d in model.requests[0].tools}
    assert first == {"tool_search", "read_result"}  # the catalogue is not sent
    assert "tool_04242" in {d.name for d in model.requests[1].tools}
    assert result.state is not None
    found, added = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert "tool_04242" in str(found.content)
    assert '{"result":4243}' in str(added.content)
    assert result.output == "4243"


async def test_small_servers_are_eager_unless_told_otherwise(stdio_demo: Make):
    eager = await stdio_demo().list_tools()
    assert len(eager) <= DEFER_THRESHOLD
    assert not any(t.defer_loading for t in eager)
    deferred = await stdio_demo(defer_loading=True, include=["add", "slow"]).list_tools()
    assert [(t.name, t.defer_loading) for t in deferred] == [("add", True), ("slow", True)]
