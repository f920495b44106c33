"""Fan-out children, sub-agents and handoffs on Temporal (time-skipping test server)."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from bastion.agent import ChildBudget
from bastion.distributed import TemporalAgent

from ._multi_agents import boss, lead, researchers, triage_desk


async def _children(handle: WorkflowHandle[object, str]) -> list[tuple[str, str]]:
    """The child workflows a workflow started: (type, id), in order."""
    history = await handle.fetch_history()
    return [
        (
            e.start_child_workflow_execution_initiated_event_attributes.workflow_type.name,
            e.start_child_workflow_execution_initiated_event_attributes.workflow_id,
        )
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]


async def test_a_fan_out_of_three_children_merges_as_the_local_fan_out(
    time_skipping: WorkflowEnvironment,
) -> None:
    budget = ChildBudget(tool_calls=1)
    local = await lead().fan_out(
        list(zip(researchers(), ["a", "b", "c"], strict=True)), per_child_budget=budget
    )
    children = researchers()
    remote_agent = TemporalAgent(lead(), children=children)
    client: Client = time_skipping.client
    async with remote_agent.worker(client):
        result = await remote_agent.fan_out(
            client,
            list(zip(children, ["a", "b", "c"], strict=True)),
            per_child_budget=budget,
            fan_out_id="fan-1",
        )
        started = await _children(client.get_workflow_handle("fan-1"))
    assert result.ok
    assert result.output == local.output == "Alpha found 1.\n\nGamma found 3."
    summary = [(c.name, c.status, c.error.code if c.error else None) for c in result.children]
    assert summary == [
        (c.name, c.status, c.error.code if c.error else None) for c in local.children
    ]
    assert summary[1] == ("beta", "failed", "budget_exceeded")
    # each child is a child workflow of its agent, its id derived from the fan-out's
    assert started == [
        ("bastion.agent.alpha.child", "fan-1/alpha"),
        ("bastion.agent.beta.child", "fan-1/beta"),
        ("bastion.agent.gamma.child", "fan-1/gamma"),
    ]
    assert [c.run_id for c in result.children] == ["fan-1/alpha", "fan-1/beta", "fan-1/gamma"]
    assert result.usage == local.usage
    assert result.usage.requests == 4  # alpha 1, beta 2 (stopped at its budget), gamma 1
