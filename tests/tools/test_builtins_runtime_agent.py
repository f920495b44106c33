"""The ``bash`` and file built-ins through an agent: results, errors and sandbox precedence."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import ToolOptions
from bastion.core import (
    AgentEndEvent,
    RunContext,
    SandboxConfig,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteStartEvent,
)
from bastion.runtimes import LocalRuntime, SandboxRuntime
from bastion.testing import Call, InMemoryRuntime, ScriptedModel, Turn
from bastion.tools.builtins import bash, edit_file, file_tools, list_dir, read_file, write_file


def _agent(model: ScriptedModel, runtime: Any, **kwargs: Any) -> Agent[Any, Any]:
    return Agent("coder", model=model, tools=[bash, *file_tools], runtime=runtime, **kwargs)


def _calls(*calls: Call) -> ScriptedModel:
    return ScriptedModel([Turn(tool_calls=[c]) for c in calls] + ["done"])


async def test_bash_returns_exit_code_stdout_and_stderr(tmp_path: Path) -> None:  # covers S-26
    model = _calls(Call("bash", {"command": "echo out; echo err >&2; exit 4"}))
    result = await _agent(model, LocalRuntime(tmp_path)).run("go")

    [record] = result.tool_calls
    assert not record.is_error
    assert json.loads(record.result) == {"exit_code": 4, "stdout": "out\n", "stderr": "err\n"}


async def test_bash_output_over_the_cap_ends_with_a_marker() -> None:  # covers S-22
    runtime = InMemoryRuntime(commands={"yes": lambda c, rt: "y" * 2_000_000})
    model = _calls(Call("bash", {"command": "yes"}))
    whole = replace(
        bash, max_result_tokens=1_000_000
    )  # let the runtime's cap show, not the limiter's
    result = await Agent("coder", model=model, tools=[whole], runtime=runtime).run("go")

    stdout = json.loads(result.tool_calls[0].result)["stdout"]
    assert stdout.startswith("y" * 1000)
    assert stdout.endswith(
        "\n[stdout truncated: showing the first 1,048,576 of 2,000,000 bytes. "
        "Redirect it to a file.]"
    )


async def test_bash_timeout_is_a_timeout_error(tmp_path: Path) -> None:
    model = _calls(Call("bash", {"command": "echo started; sleep 30", "timeout": 0.3}))
    events = [e async for e in _agent(model, LocalRuntime(tmp_path)).stream("go")]

    [error] = [e for e in events if isinstance(e, ToolExecuteErrorEvent)]
    assert error.kind == "timeout"
    assert error.message.startswith("The command timed out after 0.")
    assert "'stdout': 'started\\n'" in error.message


async def test_file_tools_edit_a_project(tmp_path: Path) -> None:  # covers S-21
    (tmp_path / "app.py").write_text("GREETING = 'hello'\nprint(GREETING)\n")
    model = _calls(
        Call("list_dir", {}),
        Call("read_file", {"path": "app.py"}),
        Call("edit_file", {"path": "app.py", "old_text": "'hello'", "new_text": "'bonjour'"}),
        Call("write_file", {"path": "docs/README.md", "content": "# App\n"}),
        Call("bash", {"command": "python3 app.py"}),
    )
    result = await _agent(model, LocalRuntime(tmp_path)).run("go")

    assert [(r.name, r.is_error) for r in result.tool_calls] == [
        ("list_dir", False),
        ("read_file", False),
        ("edit_file", False),
        ("write_file", False),
        ("bash", False),
    ]
    listing, content, edited, wrote, ran = (r.result for r in result.tool_calls)
    assert listing == "app.py (35 bytes)"
    assert content == "GREETING = 'hello'\nprint(GREETING)\n"
    assert edited == "Replaced 1 occurrence in app.py."
    assert wrote == "Wrote 6 bytes to docs/README.md."
    assert json.loads(ran)["stdout"] == "bonjour\n"
    assert (tmp_path / "docs/README.md").read_text() == "# App\n"


@pytest.mark.parametrize(
    ("call", "kind", "message"),
    [
        (Call("read_file", {"path": "../etc/passwd"}), "sandbox_violation", "contains '..'"),
        (Call("read_file", {"path": "/etc/passwd"}), "sandbox_violation", "outside the work dir"),
        (Call("write_file", {"path": "/tmp/x", "content": "x"}), "sandbox_violation", "outside"),
        (Call("bash", {"command": "ls", "cwd": ".."}), "sandbox_violation", "contains '..'"),
        (Call("read_file", {"path": "nope.txt"}), "execution_failed", "'nope.txt' does not exist"),
        (
            Call("edit_file", {"path": "a.txt", "old_text": "x", "new_text": "y"}),
            "execution_failed",
            "old_text occurs 3 times in 'a.txt'",
        ),
        (
            Call("edit_file", {"path": "a.txt", "old_text": "zz", "new_text": "y"}),
            "execution_failed",
            "old_text was not found",
        ),
        (Call("list_dir", {"path": "a.txt/"}), "execution_failed", "is a file, not a directory"),
    ],
)
async def test_refusals_reach_the_model_as_tool_errors(
    tmp_path: Path, call: Call, kind: str, message: str
) -> None:
    (tmp_path / "a.txt").write_text("x x x")
    model = _calls(call)
    result = await _agent(model, LocalRuntime(tmp_path)).run("go")

    [record] = result.tool_calls
    assert record.is_error
    assert record.error_kind == kind
    assert message in record.result
    assert result.status == "completed"  # the model read the error and answered


async def test_an_agent_without_runtime_gets_a_clear_error() -> None:
    model = _calls(Call("read_file", {"path": "a.txt"}))
    result = await Agent("coder", model=model, tools=[read_file]).run("go")

    [record] = result.tool_calls
    assert record.error_kind == "capability_blocked"
    assert "needs a runtime and this agent has none" in record.result


async def test_sandbox_precedence_reaches_the_tools() -> None:  # covers, T-09
    """Scenario: agent and tool configs; the tool's wins, False wins, enabled=False is off."""
    agent_config = SandboxConfig(timeout=5)
    tool_config = SandboxConfig(timeout=9, allow_network=True)
    runtime = InMemoryRuntime()

    def make(name: str, sandbox: bool | SandboxConfig | None) -> Any:
        async def run(ctx: RunContext[Any]) -> str:
            """Run a command."""
            assert ctx.runtime is not None
            await ctx.runtime.exec(name)
            return name

        return tool(run, name=name, side_effect_class="side_effecting", sandbox=sandbox)

    tools = [
        make("inherits", None),
        make("own", tool_config),
        make("opted_out", False),
        make("disabled", SandboxConfig(enabled=False)),
        make("forced", True),
    ]
    model = ScriptedModel([Turn(tool_calls=[Call(t.name) for t in tools]), "done"])
    agent = Agent(
        "a",
        model=model,
        tools=tools,
        runtime=runtime,
        tool_options=ToolOptions(sandbox=agent_config, max_parallel=1),
    )
    await agent.run("go")

    assert {c.argv[0]: c.sandbox for c in runtime.calls} == {
        "inherits": agent_config,
        "own": tool_config,
        "opted_out": None,
        "disabled": None,
        "forced": agent_config,
    }


async def test_a_sandboxed_bash_tool_under_a_local_agent(tmp_path: Path) -> None:
    sandboxed_bash = replace(bash, sandbox=SandboxConfig(timeout=5))
    model = _calls(Call("bash", {"command": "ls /root 2>&1; echo $HOME"}))
    agent = Agent("coder", model=model, tools=[sandboxed_bash], runtime=LocalRuntime(tmp_path))
    result = await agent.run("go")

    output = json.loads(result.tool_calls[0].result)
    assert "No such file or directory" in output["stdout"]  # the sandbox hides /root
    assert output["stdout"].endswith("/tmp\n")


async def test_end_to_end_sandboxed_agent(tmp_path: Path) -> None:  # covers S-26, S-21
    """A user's view: the model runs bash in the sandbox, then reads what it wrote."""
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("bash", {"command": "python3 -c 'print(sum(range(10)))' > sum.txt"})
                ]
            ),
            Turn(tool_calls=[Call("read_file", {"path": "sum.txt"})]),
            "The sum is 45.",
        ]
    )
    agent = Agent(
        "coder",
        model=model,
        tools=[bash, read_file, write_file, edit_file, list_dir],
        runtime=SandboxRuntime(tmp_path, SandboxConfig(timeout=10)),
    )
    events = [e async for e in agent.stream("Add 0..9 with Python.")]

    tool_events = [
        (e.type, e.tool_name, e.result if isinstance(e, ToolExecuteEndEvent) else e.arguments)
        for e in events
        if isinstance(e, ToolExecuteStartEvent | ToolExecuteEndEvent)
    ]
    assert tool_events == [
        (
            "tool.execute.start",
            "bash",
            '{"command": "python3 -c \'print(sum(range(10)))\' > sum.txt"}',
        ),
        ("tool.execute.end", "bash", '{"exit_code":0,"stdout":"","stderr":""}'),
        ("tool.execute.start", "read_file", '{"path": "sum.txt"}'),
        ("tool.execute.end", "read_file", "45\n"),
    ]
    end = events[-1]
    assert isinstance(end, AgentEndEvent)
    assert (end.status, end.output, end.steps) == ("completed", "The sum is 45.", 3)
    assert (tmp_path / "sum.txt").read_text() == "45\n"
    # The model read both results on its next requests.
    assert "45" in str(model.requests[2].messages[-1])
