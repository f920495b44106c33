"""Published MCP servers from PyPI over stdio: mcp-server-time and mcp-server-git."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from bastion import Agent
from bastion.core import ToolMessage
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn


def executable(name: str) -> str:
    # The venv's scripts, whether or not the venv is activated.
    search = os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])
    found = shutil.which(name, path=search)
    assert found is not None, f"{name} is installed by `make install` (the dev group)"
    return found


async def test_mcp_server_time_answers_through_an_agent():
    server = MCPServer.stdio(executable("mcp-server-time"), ["--local-timezone", "UTC"])
    assert server.name == "mcp-server-time"
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("get_current_time", {"timezone": "Asia/Tokyo"})]),
            Turn(tool_calls=[Call("get_current_time", {"timezone": "Mars/Olympus"})]),
            Turn(text="It is evening in Tokyo."),
        ]
    )
    async with Agent("clock", model=model, tools=[server]) as agent:
        result = await agent.run("What time is it in Tokyo?")
    advertised = {d.name for d in model.requests[0].tools}
    # read_result pages the resources MCP tools link to.
    assert advertised == {"get_current_time", "convert_time", "read_result"}
    assert result.state is not None
    tokyo, mars = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert '"timezone":"Asia/Tokyo"' in str(tokyo.content)
    assert not tokyo.is_error
    assert mars.is_error  # the server's own error, read by the model
    assert result.output == "It is evening in Tokyo."


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    path.mkdir()
    subprocess.run(["git", "init", "-q", str(path)], check=True)
    (path / "notes.txt").write_text("hello\n")
    return path


async def test_mcp_server_git_reports_the_status_of_a_repository(repo: Path):
    server = MCPServer.stdio(
        executable("mcp-server-git"),
        ["--repository", str(repo)],
        name="git",
        side_effects={"git_status": "read_only", "git_diff*": "read_only", "git_log": "read_only"},
    )
    async with server:
        described = await server.describe_tools()
        assert len(described) >= 10
        tools = {t.name: t for t in await server.list_tools()}
        assert tools["git_status"].side_effect_class == "read_only"
        assert tools["git_commit"].side_effect_class == "external_stateful"
        assert len(tools) == len(described)  # at most 20 tools: all advertised eagerly
        assert not any(t.defer_loading for t in tools.values())
        model = ScriptedModel(
            [Turn(tool_calls=[Call("git_status", {"repo_path": str(repo)})]), Turn(text="ok")]
        )
        agent = Agent("git", model=model, tools=[server])
        result = await agent.run("status?")
    assert result.state is not None
    (status,) = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert "notes.txt" in str(status.content)
    assert json.dumps(tools["git_status"].parameters)  # schemas are plain JSON


async def test_the_documented_example_runs():
    example = Path(__file__).parents[2] / "examples" / "mcp_time.py"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(example),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0
    lines = out.decode().splitlines()
    assert lines[0] == "get_current_time -> [bastion:untrusted-data begin]"
    assert '"timezone":"Asia/Tokyo"' in lines[1]
    assert lines[-1] == "completed: I asked the time server for Tokyo's time."
