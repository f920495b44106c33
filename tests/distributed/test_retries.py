"""Model calls as activities: retried by the agent's retry config, the taxonomy decides."""

from __future__ import annotations

from temporalio.api.enums.v1 import EventType
from temporalio.testing import WorkflowEnvironment

from bastion import Agent, RetryConfig
from bastion.core import AuthenticationFailed, RateLimited
from bastion.distributed import TemporalAgent
from bastion.testing import ScriptedModel, Turn


async def _attempts(remote_agent: TemporalAgent[str], env: WorkflowEnvironment, wid: str) -> int:
    """The attempt number of the workflow's last completed or failed model activity."""
    history = await env.client.get_workflow_handle(wid).fetch_history()
    started = [
        e.activity_task_started_event_attributes.attempt
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_STARTED
    ]
    return started[-1]


async def test_a_retryable_model_error_is_retried_by_the_activity(
    time_skipping: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([Turn(error=RateLimited("slow down")), "Hello."])
    agent = Agent("retrying", model=model, retry=RetryConfig(max_retries=2, initial_delay=5))
    remote_agent = TemporalAgent(agent)
    async with remote_agent.worker(time_skipping.client):
        result = await remote_agent.run(time_skipping.client, "Hi")
        attempts = await _attempts(remote_agent, time_skipping, result.workflow_id)
    assert (result.status, result.output, result.steps) == ("completed", "Hello.", 1)
    assert len(model.requests) == 2  # the first attempt failed, the second answered
    assert attempts == 2


async def test_a_non_retryable_model_error_fails_the_run_at_once(
    time_skipping: WorkflowEnvironment,
) -> None:
    model = ScriptedModel([Turn(error=AuthenticationFailed("bad key")), "never sent"])
    agent = Agent("refused", model=model, retry=RetryConfig(max_retries=3))
    remote_agent = TemporalAgent(agent)
    async with remote_agent.worker(time_skipping.client):
        result = await remote_agent.run(time_skipping.client, "Hi")
        attempts = await _attempts(remote_agent, time_skipping, result.workflow_id)
    assert result.status == "failed"
    assert result.error is not None
    assert "bad key" in result.error.message
    assert len(model.requests) == 1
    assert attempts == 1
