"""MCP calls under governance, approvals and the journal."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from bastion import Agent, GovernanceOptions
from bastion.core import ToolMessage
from bastion.governance import Limit
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive

Make = Callable[..., MCPServer]


async def test_each_call_is_governed_as_tool_server_name(stdio_demo: Make):
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
            Turn(tool_calls=[Call("add", {"a": 2, "b": 2})]),
            Turn(text="done"),
        ]
    )
    agent = Agent(
        "a",
        model=model,
        tools=[stdio_demo()],
        governance=GovernanceOptions(
            oracles={"tool:demo:add": [Limit(type="calls", max=1, window="invocation")]}
        ),
    )
    async with agent:
        result = await agent.run("go")
    assert result.state is not None
    first, second = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert not first.is_error
    assert second.is_error  # the limit on tool:demo:add refused the second call


async def test_approval_and_side_effect_classes_are_configurable_per_tool(stdio_demo: Make):
    server = stdio_demo(needs_approval=["count"], side_effects={"add": "pure", "slow": "read_only"})
    tools = await server.list_tools()
    by_name = {t.name: t for t in tools}
    assert by_name["add"].side_effect_class == "pure"
    assert by_name["slow"].side_effect_class == "read_only"
    assert by_name["crash"].side_effect_class == "external_stateful"
    assert by_name["count"].needs_approval is True
    assert by_name["add"].needs_approval is False


async def test_a_resumed_run_never_calls_a_finished_mcp_tool_again(
    stdio_demo: Make, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    counted = tmp_path / "count.txt"
    monkeypatch.setenv("DEMO_COUNT_FILE", str(counted))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    script = [
        Turn(tool_calls=[Call("count")]),
        Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]),  # needs approval: suspends
        Turn(text="finished"),
    ]
    first = Agent(
        "a",
        model=ScriptedModel(script),
        tools=[stdio_demo(needs_approval=["add"])],
        store=store,
    )
    async with first:
        suspended = await first.run("go")
    assert suspended.status == "awaiting_approval"
    assert counted.read_text() == "call\n"
    assert suspended.state is not None
    (pending,) = suspended.state.pending_approvals
    # Another agent instance, with its own server process, resumes from the store.
    second = Agent(
        "a",
        model=ScriptedModel(script[2:]),
        tools=[stdio_demo(needs_approval=["add"])],
        store=store,
    )
    async with second:
        resumed = await second.resume(
            suspended.run_id,
            directive=Directive(
                approvals=[ApprovalDecision(tool_call_id=pending.call.id, granted=True)]
            ),
        )
    assert resumed.status == "completed"
    assert resumed.output == "finished"
    assert counted.read_text() == "call\n"  # count ran once, in the first process
