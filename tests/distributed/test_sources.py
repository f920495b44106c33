"""An agent with an MCP server on Temporal: the worker lists and calls the real server."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

from temporalio.testing import WorkflowEnvironment

from bastion import Agent
from bastion.agent import RunOptions
from bastion.core import EventBus, ToolMessage
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn

from ._history import run_on_temporal, scheduled

DEMO = str(Path(__file__).parents[1] / "mcp" / "demo_server.py")


def _agent(seen: list[tuple[str, Any]], server: MCPServer) -> Agent[None, str]:
    script = [
        Turn(tool_calls=[Call("add", {"a": 2, "b": 3})]),
        Turn(tool_calls=[Call("slow", {"steps": 2})]),
        Turn(tool_calls=[Call("fail", {"reason": "no"})]),
        "Done.",
    ]
    bus = EventBus()
    bus.on("tool.execute.progress", lambda e: seen.append((e.type, (e.current, e.message))))
    bus.on("tool.execute.end", lambda e: seen.append((e.type, e.result)))
    bus.on("tool.execute.error", lambda e: seen.append((e.type, e.message)))
    return Agent(
        "mcp-user",
        model=ScriptedModel(script),
        tools=[server],
        run_options=RunOptions(event_bus=bus),
    )


def _offered_and_read(agent: Agent[Any, Any]) -> tuple[list[list[str]], list[str]]:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    offered = [sorted(t.name for t in r.tools) for r in model.requests]
    read = [str(m.content) for m in model.requests[-1].messages if isinstance(m, ToolMessage)]
    return offered, read


async def test_an_mcp_server_is_listed_and_called_by_the_worker_as_locally(
    time_skipping: WorkflowEnvironment,
) -> None:
    # one server process for both runs (it takes seconds to start on a loaded machine)
    server = MCPServer.stdio(sys.executable, [DEMO, "stdio"], name="demo")
    local_seen: list[tuple[str, Any]] = []
    local_agent = _agent(local_seen, server)
    seen: list[tuple[str, Any]] = []
    agent = _agent(seen, server)
    async with server:
        local = await local_agent.run("Use the server")
        result, history, _ = await run_on_temporal(time_skipping, agent, "Use the server")

    assert (result.status, result.output) == ("completed", local.output)
    # the same tools offered at every step, the same results read, progress, errors
    offered, read = _offered_and_read(agent)
    assert (offered, read) == _offered_and_read(local_agent)
    assert {"add", "slow", "fail"} <= set(offered[0])
    assert '{"result":5}' in read[0]
    assert "untrusted-data begin" in read[0]  # the MCP result's trust crossed with it
    assert seen == local_seen
    assert ("tool.execute.progress", (2, "step 2")) in seen
    assert [kind for kind, _ in seen].count("tool.execute.error") == 1
    # a listing as the run starts and before each model call, each call, as activities
    assert scheduled(history) == ["source"] + ["source", "model", "tool"] * 3 + ["source", "model"]
