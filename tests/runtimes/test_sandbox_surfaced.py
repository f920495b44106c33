"""The sandbox each tool call resolved to, on its start event, its audit row and its span."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bastion import Agent, tool
from bastion.agent import ToolOptions
from bastion.core import SandboxConfig, ToolExecuteStartEvent
from bastion.runtimes import LocalRuntime, SandboxRuntime
from bastion.testing import Call, ScriptedModel, Turn


@tool(side_effect_class="read_only")
def inherits() -> str:
    """Use the agent's sandbox."""
    return "ok"


@tool(side_effect_class="read_only", sandbox=False)
def unsandboxed() -> str:
    """Run commands on the host."""
    return "ok"


@tool(side_effect_class="read_only", sandbox=SandboxConfig(timeout=9, allow_network=True))
def networked() -> str:
    """Run commands in a sandbox that may reach the network."""
    return "ok"


def calls() -> ScriptedModel:
    names = ("inherits", "unsandboxed", "networked")
    return ScriptedModel([Turn(tool_calls=[Call(n, {}, id=n) for n in names]), "done"])


async def test_each_call_reports_the_sandbox_it_resolved_to(tmp_path: Path) -> None:
    # covers G-27
    agent = Agent(
        "ops",
        model=calls(),
        tools=[inherits, unsandboxed, networked],
        runtime=LocalRuntime(str(tmp_path)),
        tool_options=ToolOptions(sandbox=SandboxConfig(timeout=5, max_memory_mb=128)),
    )
    rows: list[Any] = []
    agent.audit.subscribe(rows.append)
    events = [e async for e in agent.stream("Check the hosts.")]
    starts = {e.tool_name: e.sandbox for e in events if isinstance(e, ToolExecuteStartEvent)}
    assert starts == {
        "inherits": "sandbox: no network, 5s, 128 MiB, 64 processes",
        "unsandboxed": "none",
        "networked": "sandbox: network, 9s, 256 MiB, 64 processes",
    }
    assert {row.tool_name: row.sandbox for row in rows} == starts


async def test_a_sandboxed_runtime_given_as_is_and_no_runtime_at_all(tmp_path: Path) -> None:
    model = ScriptedModel([Turn(tool_calls=[Call("inherits", {}, id="c")]), "done"])
    agent = Agent(
        "ops",
        model=model,
        tools=[inherits],
        runtime=SandboxRuntime(str(tmp_path), SandboxConfig(timeout=3)),
    )
    events = [e async for e in agent.stream("Check.")]
    (start,) = [e for e in events if isinstance(e, ToolExecuteStartEvent)]
    assert start.sandbox == "sandbox: no network, 3s, 256 MiB, 64 processes"

    bare = Agent(
        "bare", model=ScriptedModel([Turn(tool_calls=[Call("inherits", {})]), "done"]),
        tools=[inherits],
    )  # fmt: skip
    bare_events = [e async for e in bare.stream("Check.")]
    (bare_start,) = [e for e in bare_events if isinstance(e, ToolExecuteStartEvent)]
    assert bare_start.sandbox is None  # no runtime: the tool's code runs in this process
