"""Code mode in an agent workflow: the script runs in the worker's sandbox, in one activity."""

from __future__ import annotations

import json
from typing import Any

from temporalio.testing import WorkflowEnvironment

from bastion import Agent, ToolOptions, tool
from bastion.core import ToolMessage
from bastion.testing import Call, ScriptedModel, Turn

from ._history import run_on_temporal, scheduled

pages: list[int] = []

SCRIPT = """\
total = 0
for page in range(3):
    items = await tools.list_items(page=page)
    total += sum(item["price"] for item in items)
try:
    await tools.explode(why="test")
except RuntimeError as error:
    failed = str(error)
{"total": total, "failed": failed}
"""


@tool(side_effect_class="read_only")
def list_items(page: int) -> list[dict[str, Any]]:
    """List one page of the catalogue."""
    pages.append(page)
    return [{"id": i, "price": (page + 1) * 10} for i in range(4)]


@tool(side_effect_class="read_only")
def explode(why: str) -> str:
    """Fail."""
    raise ValueError(f"exploded: {why}")


def _coder() -> Agent[None, str]:
    script = [
        Turn(tool_calls=[Call("code_search", {"query": "catalogue"})]),
        Turn(tool_calls=[Call("code_execute", {"source": SCRIPT})]),
        "The catalogue is worth 240.",
    ]
    return Agent(
        "coder",
        model=ScriptedModel(script),
        tools=[list_items, explode],
        tool_options=ToolOptions(invocation="code-mode"),
    )


def _seen(agent: Agent[Any, Any]) -> tuple[list[list[str]], list[str]]:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    offered = [[t.name for t in r.tools] for r in model.requests]
    read = [str(m.content) for m in model.requests[-1].messages if isinstance(m, ToolMessage)]
    return offered, read


async def test_code_mode_runs_the_script_on_the_worker_as_locally(
    time_skipping: WorkflowEnvironment,
) -> None:
    local_agent = _coder()
    async with local_agent:
        local = await local_agent.run("What is the catalogue worth?")
    assert pages == [0, 1, 2]
    pages.clear()
    agent = _coder()
    async with agent:
        result, history, _ = await run_on_temporal(
            time_skipping, agent, "What is the catalogue worth?"
        )

    assert (result.status, result.output) == ("completed", local.output)
    # the model was offered code mode's two tools only, and read the same results
    offered, read = _seen(agent)
    assert (offered, read) == _seen(local_agent)
    assert offered[0] == ["code_execute", "code_search"]
    assert "await tools.list_items(page: int)" in read[0]
    failure = "execution_failed: Tool 'explode' failed: ValueError: exploded: test"
    assert json.loads(read[1]) == {"total": 240, "failed": failure}
    # the script's tool calls ran on the worker, inside the one code_execute activity
    assert pages == [0, 1, 2]
    assert scheduled(history) == ["model", "tool", "model", "tool", "model"]
