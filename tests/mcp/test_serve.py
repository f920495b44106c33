"""A Bastion agent served over MCP, called by Bastion's own MCP client."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from bastion import Agent, tool
from bastion.core import UserError
from bastion.mcp import MCPServer, agent_server
from bastion.testing import Call, ScriptedModel, Turn

AGENTS = str(Path(__file__).parents[1] / "cli" / "scripted_agents.py")


@tool(side_effect_class="pure")
def double(x: int) -> int:
    """Double a number."""
    return 2 * x


async def test_an_agent_served_in_process_answers_and_reports_its_tool_calls():
    model = ScriptedModel(
        [Turn(tool_calls=[Call("double", {"x": 21})]), Turn(text="21 doubled is 42.")]
    )
    agent = Agent("doubler", model=model, tools=[double], description="Doubles numbers.")
    client = MCPServer.in_process(agent_server(agent), name="served")
    seen: list[tuple[float, str | None]] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append((progress, message))

    async with client:
        (listed,) = await client.describe_tools()
        assert (listed.name, listed.description) == ("doubler", "Doubles numbers.")
        result = await client.call_tool("doubler", {"input": "double 21"}, progress=progress)
    assert not result.is_error
    assert result.structured_content == {"result": "21 doubled is 42."}
    assert seen == [(1, "calling double")]
    assert model.requests[0].messages[-1].content == "double 21"  # type: ignore[union-attr]


async def test_a_run_that_fails_is_an_error_result_naming_why():
    from bastion.core import AuthenticationFailed

    model = ScriptedModel([Turn(error=AuthenticationFailed("Invalid API key.", status=401))])
    client = MCPServer.in_process(agent_server(Agent("broken", model=model, retry=None)))
    async with client:
        result = await client.call_tool("broken", {"input": "hi"})
    assert result.is_error
    assert "failed: AuthenticationFailed: Invalid API key." in str(result.content[0].text)  # type: ignore[union-attr]


def test_an_invalid_tool_name_is_a_user_error():
    agent = Agent("a", model=ScriptedModel([Turn(text="x")]))
    with pytest.raises(UserError, match="Invalid MCP tool name 'a b'"):
        agent_server(agent, tool_name="a b")


async def test_bastion_mcp_serve_speaks_stdio_to_any_client():
    server = MCPServer.stdio(
        sys.executable, ["-m", "bastion.cli", "mcp", "serve", f"{AGENTS}:doubler"], name="cli"
    )
    async with server:
        result = await server.call_tool("doubler", {"input": "double 2 and 21"})
    assert result.structured_content == {"result": "2 doubled is 4 and 21 doubled is 42."}
