"""An agent node waiting for a tool approval suspends the graph durably; a resume decides it.

The agent's run (its ``RunState``) is saved with the execution's suspension; a fresh graph
and a fresh agent on the same store continue that run with the approval: the approved call
runs once, the model is not asked again for the call it already made, and the nodes that
had finished do not run again.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.core import AssistantMessage, ModelRequest, ToolMessage, UserError
from bastion.graph import Graph, StoreCheckpointer
from bastion.testing import Call, FunctionModel, Turn, isolated_store
from bastion.tools import ApprovalDecision, Directive


@pytest.fixture(params=["sqlite", "postgres"])
async def store_url(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[str]:
    async with isolated_store(request.param, tmp_path) as url:
        yield url


def build(url: str, log: list[str]) -> Graph:
    """plan → writer (an agent whose ``publish`` tool needs approval) → report."""

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def publish(text: str) -> str:
        """Publish a text."""
        log.append(f"publish:{text}")
        return f"published {text!r}"

    def answer(request: ModelRequest) -> Turn:
        log.append("model")
        if not any(isinstance(m, AssistantMessage) for m in request.messages):
            return Turn(tool_calls=[Call("publish", {"text": "v1"}, id="c1")])
        results = [m.content for m in request.messages if isinstance(m, ToolMessage)]
        return Turn(text=f"done: {results[-1]}")

    async def plan(inputs: list[Any]) -> str:
        log.append("plan")
        return f"write about {inputs[0]}"

    async def report(inputs: list[Any]) -> str:
        log.append("report")
        return str(inputs[0]).upper()

    writer = Agent("writer", model=FunctionModel(answer), tools=[publish])
    graph = Graph("desk", checkpointer=StoreCheckpointer(url))
    graph.add_node("plan", plan).add_node("writer", writer).add_node("report", report)
    graph.add_edge("plan", "writer").add_edge("writer", "report")
    return graph


async def test_an_agent_node_approval_suspends_the_graph_and_a_fresh_one_resumes_it(
    store_url: str,
) -> None:
    log: list[str] = []
    result = await build(store_url, log).run("graphs", execution_id="gx_desk")
    assert result.status == "suspended"
    assert log == ["plan", "model"]  # the call waits for a human: publish did not run
    record = await StoreCheckpointer(store_url).record("gx_desk")
    assert record.status == "awaiting_approval"
    assert [(p["id"], p["node"], p["kind"], p["action"]) for p in record.pending] == [
        ("c1", "writer", "approval", "tool:publish")
    ]

    fresh_log: list[str] = []
    fresh = build(store_url, fresh_log)  # another process: new graph, new agent
    with pytest.raises(UserError, match="waiting for a decision on: c1"):
        await fresh.resume("gx_desk")
    approve = Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=True)])
    resumed = await fresh.resume("gx_desk", approve)
    assert resumed.status == "completed"
    assert resumed.output == "DONE: PUBLISHED 'V1'"
    # The approved call ran once; the model was asked only for the final answer; plan
    # (finished before the suspension) did not run again.
    assert fresh_log == ["publish:v1", "model", "report"]
