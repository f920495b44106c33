"""Running an agent on the time-skipping server and reading its history, for the tests."""

from __future__ import annotations

from typing import Any

from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHistory
from temporalio.testing import WorkflowEnvironment

from bastion import Agent
from bastion.distributed import TemporalAgent, WorkflowResult


def scheduled(history: WorkflowHistory) -> list[str]:
    """The kinds (``model``, ``tool``, ``source``) of the activities scheduled, in order."""
    attributes: list[Any] = [
        e.activity_task_scheduled_event_attributes
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    return [a.activity_type.name.rpartition(".")[2] for a in attributes]


async def run_on_temporal(
    env: WorkflowEnvironment, agent: Agent[Any, Any], prompt: str
) -> tuple[WorkflowResult[Any], WorkflowHistory, TemporalAgent[Any]]:
    """Run ``agent`` as a workflow with a worker of this process: result, history, wrapper."""
    remote_agent = TemporalAgent(agent)
    async with remote_agent.worker(env.client):
        handle = await remote_agent.start(env.client, prompt)
        result = await remote_agent.result(env.client, handle.id)
    return result, await handle.fetch_history(), remote_agent
