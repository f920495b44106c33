"""An agent run as a Temporal workflow, on the time-skipping test server."""

from __future__ import annotations

import asyncio
import uuid

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowHandle
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import Agent, UserError, tool
from bastion.core import ToolMessage
from bastion.distributed import TemporalAgent
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn

from ._agents import adder, mailer


async def _activities(handle: WorkflowHandle[object, str]) -> list[str]:
    """The activity types the workflow scheduled, in order."""
    history = await handle.fetch_history()
    return [
        e.activity_task_scheduled_event_attributes.activity_type.name
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]


async def test_a_run_on_temporal_ends_as_the_local_run(time_skipping: WorkflowEnvironment) -> None:
    local = await adder().run("Add 2 and 3")
    remote_agent = TemporalAgent(adder())
    client: Client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Add 2 and 3")
        result = await remote_agent.result(client, handle.id)
        scheduled = await _activities(handle)
    assert (result.status, result.output, result.text) == ("completed", "The sum is 5.", local.text)
    assert (result.steps, result.usage) == (local.steps, local.usage)
    assert result.workflow_id == handle.id
    assert result.run_id.startswith("run_")
    # every model call and every tool call was an activity, in the loop's order
    model, tool = f"{remote_agent.workflow_name}.model", f"{remote_agent.workflow_name}.tool"
    assert scheduled == [model, tool, model]
    # the loop is deterministic workflow code: its history replays without divergence
    replayer = Replayer(workflows=[remote_agent.workflow])
    replayed = await replayer.replay_workflow(await handle.fetch_history())
    assert replayed.replay_failure is None


async def test_an_approval_parks_the_workflow_and_an_update_resumes_it(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote_agent = TemporalAgent(mailer())
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Mail Bob")
        parked = await remote_agent.settle(client, handle.id)
        assert parked.status == "awaiting_approval"
        [pending] = parked.pending
        assert (pending.tool_name, pending.arguments) == (
            "send_email",
            {"to": "bob@example.com", "body": "Hi"},
        )
        assert parked.usage.requests == 1
        queried = await remote_agent.status(client, handle.id)
        assert queried == parked
        assert await remote_agent.approve(client, handle.id, pending.tool_call_id) == []
        result = await remote_agent.result(client, handle.id)
        ended = await remote_agent.status(client, handle.id)
    assert (result.status, result.output) == ("completed", "Done.")
    assert (ended.status, ended.pending, ended.usage.requests) == ("completed", [], 2)
    assert await _activities(handle) == [
        f"{remote_agent.workflow_name}.model",
        f"{remote_agent.workflow_name}.tool",
        f"{remote_agent.workflow_name}.model",
    ]


async def test_the_update_refuses_a_call_that_is_not_waiting_and_a_denial_reaches_the_model(
    time_skipping: WorkflowEnvironment,
) -> None:
    agent = mailer()
    model = agent.config.model
    assert isinstance(model, FunctionModel)
    remote_agent = TemporalAgent(agent)
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Mail Bob", workflow_id=f"deny-{uuid.uuid4()}")
        [pending] = (await remote_agent.settle(client, handle.id)).pending
        with pytest.raises(UserError, match=r"No call 'call_nope' is waiting for a decision"):
            await remote_agent.approve(client, handle.id, "call_nope")
        assert (await remote_agent.status(client, handle.id)).status == "awaiting_approval"
        await remote_agent.deny(client, handle.id, pending.tool_call_id, "Not today")
        result = await remote_agent.result(client, handle.id)
    assert result.output == "Done."
    [denied] = [m for m in model.requests[-1].messages if isinstance(m, ToolMessage)]
    assert denied.is_error
    assert "Not today" in str(denied.content)
    # the denied call never ran: only the two model calls were activities
    assert await _activities(handle) == [f"{remote_agent.workflow_name}.model"] * 2


def test_bad_timeouts_are_refused_before_anything_is_registered() -> None:
    # What of an agent cannot run on Temporal yet is refused by name in test_multi_agent.
    with pytest.raises(UserError, match="activity_timeout must be > 0"):
        TemporalAgent(adder(), activity_timeout=0)
    with pytest.raises(UserError, match="heartbeat_timeout must be > 0"):
        TemporalAgent(adder(), heartbeat_timeout=-1)


async def test_start_and_decide_refuse_bad_input_before_any_call(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote_agent = TemporalAgent(adder())
    with pytest.raises(UserError, match="non-empty prompt"):
        await remote_agent.start(time_skipping.client, "  ")
    with pytest.raises(UserError, match="at least one ApprovalDecision"):
        await remote_agent.decide(time_skipping.client, "any")


async def test_a_side_effecting_call_that_timed_out_is_held_and_granted_runs_again(
    time_skipping: WorkflowEnvironment,
) -> None:
    runs: list[int] = []

    @tool(side_effect_class="side_effecting", timeout=1)
    async def charge(amount: int) -> str:
        """Charge the card."""
        runs.append(amount)
        if len(runs) == 1:
            await asyncio.Event().wait()  # never answers: the activity times out
        return f"charged {amount}"

    script = [Turn(tool_calls=[Call("charge", {"amount": 5})]), "Charged."]
    remote_agent = TemporalAgent(Agent("charger", model=ScriptedModel(script), tools=[charge]))
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Charge 5")
        parked = await remote_agent.settle(client, handle.id)
        [held] = parked.pending
        assert held.input is not None
        assert held.input.message.startswith("Outcome unknown: the call to 'charge' started")
        assert runs == [5]  # held, not retried
        await remote_agent.approve(client, handle.id, held.tool_call_id)  # run it again
        result = await remote_agent.result(client, handle.id)
    assert (result.status, result.output, runs) == ("completed", "Charged.", [5, 5])


async def test_a_cancelled_run_ends_aborted_and_its_tool_activity_is_cancelled(
    time_skipping: WorkflowEnvironment,
) -> None:
    started, stopped = asyncio.Event(), asyncio.Event()

    @tool(side_effect_class="read_only")
    async def watch() -> str:
        """Watch until told to stop."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    script = [Turn(tool_calls=[Call("watch", {})]), "Never said."]
    agent = Agent("watcher", model=ScriptedModel(script), tools=[watch])
    remote = TemporalAgent(agent, heartbeat_timeout=1)  # a long tool heartbeats
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "Watch")
        await started.wait()
        await remote.cancel(client, handle.id)
        result = await remote.result(client, handle.id)
        await stopped.wait()  # the activity learned it at its next heartbeat
        await remote.cancel(client, handle.id)  # closed already: nothing happens
        with pytest.raises(UserError, match="No run 'run-nope' on Temporal"):
            await remote.cancel(client, "run-nope")
    assert result.error is not None
    assert (result.status, result.error.code, result.output) == ("aborted", "run_aborted", None)
    assert result.usage.requests == 1  # the model was not asked again
    # the workflow completed (with the aborted run), it did not fail
    description = await handle.describe()
    assert description.status is not None
    assert description.status.name == "COMPLETED"


async def test_a_parked_run_that_is_cancelled_denies_its_calls_and_ends_aborted(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = TemporalAgent(mailer())
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "Mail Bob")
        assert (await remote.settle(client, handle.id)).status == "awaiting_approval"
        await client.get_workflow_handle(handle.id).cancel()  # as `temporal workflow cancel`
        result = await remote.result(client, handle.id)
        ended = await remote.status(client, handle.id)
    assert (result.status, result.output) == ("aborted", None)
    assert (ended.status, ended.pending) == ("aborted", [])
    assert await _activities(handle) == [f"{remote.workflow_name}.model"]  # no email sent
