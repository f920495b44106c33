"""Fan-out children, sub-agents and handoffs on Temporal (time-skipping test server)."""

from __future__ import annotations

from collections.abc import Callable, Sequence

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import Client, WorkflowExecutionStatus, WorkflowHandle
from temporalio.testing import WorkflowEnvironment

from bastion import Agent, UserError, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.distributed import TemporalAgent
from bastion.distributed._multi import activity_name, worker_parts, workflow_name
from bastion.multi import ChildBudget, ChildResult, Judge, as_tool, fan_out, subagents
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn

from ._multi_agents import boss, filtering_boss, lead, researchers, stalled, triage_desk
from .test_workflow import _activities  # pyright: ignore[reportPrivateUsage]


@tool(side_effect_class="side_effecting", needs_approval=True)
def refund(amount: int) -> str:
    """Refund the customer."""
    return f"refunded {amount}"


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
    local = await fan_out(
        lead(), list(zip(researchers(), ["a", "b", "c"], strict=True)), per_child_budget=budget
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
    async with remote_agent.worker(client):
        # the same fan-out id again: its result, nothing run again (the scripts are spent)
        again = await remote_agent.fan_out(client, [(children[0], "a")], fan_out_id="fan-1")
    assert again == result


async def test_a_merge_registered_by_name_runs_on_the_workers(
    time_skipping: WorkflowEnvironment,
) -> None:
    def backwards(children: Sequence[ChildResult]) -> str:
        return " | ".join(f"{c.name}: {c.output}" for c in reversed(children) if c.ok)

    alpha, beta, gamma = researchers()
    remote_agent = TemporalAgent(lead(), children=[alpha, gamma], merges={"backwards": backwards})
    client = time_skipping.client
    async with remote_agent.worker(client):
        result = await remote_agent.fan_out(client, [(alpha, "a"), (gamma, "c")], merge="backwards")
        with pytest.raises(UserError, match="not registered"):
            await remote_agent.fan_out(client, [(alpha, "a")], merge=lambda _: "x")
        with pytest.raises(UserError, match="agent 'beta', which this TemporalAgent does not"):
            await remote_agent.fan_out(client, [(beta, "b")])
    assert (result.ok, result.strategy, result.output) == (
        True,
        "custom",
        "gamma: Gamma found 3. | alpha: Alpha found 1.",
    )


def test_what_a_temporal_agent_cannot_run_yet_is_refused_by_name() -> None:
    explorer = Agent("explorer", model=ScriptedModel(["x"]))
    tracked = as_tool(explorer, name="explore", causality="enforce")
    with pytest.raises(UserError, match="sub-agent tool 'explore' with causality tracking"):
        TemporalAgent(Agent("boss", model=ScriptedModel(["x"]), tools=[tracked]))
    judge = Judge(judge=Agent("judge", model=ScriptedModel(["PICK: 1"])))
    with pytest.raises(UserError, match="Judge whose judge is an agent"):
        TemporalAgent(lead(), merges={"judged": judge})
    twin = Agent("explorer", model=ScriptedModel(["y"]))
    with pytest.raises(UserError, match="two different agents named 'explorer'"):
        TemporalAgent(lead(), children=[explorer, twin])


async def test_a_handoff_continues_the_workflow_with_the_target_as_locally(
    time_skipping: WorkflowEnvironment,
) -> None:
    local_triage, _ = triage_desk()
    local = await local_triage.run("I want a refund")
    triage, _ = triage_desk()
    remote_agent = TemporalAgent(triage)
    assert set(remote_agent.reach) == {"triage", "billing"}
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "I want a refund")
        result = await remote_agent.result(client, handle.id)
        scheduled = await _activities(handle)
        started = await _children(handle)
    assert (result.status, result.output) == ("completed", "Your refund is 42 EUR.")
    assert (result.text, result.steps, result.usage) == (local.text, local.steps, local.usage)
    # one workflow: the target's model and tool calls are its own activities, no child
    assert scheduled == [
        "bastion.agent.triage.model",
        "bastion.agent.billing.model",
        "bastion.agent.billing.tool",
        "bastion.agent.billing.model",
    ]
    assert started == []


async def test_a_run_parked_after_a_handoff_resumes_with_the_target(
    time_skipping: WorkflowEnvironment,
) -> None:
    billing = Agent(
        "billing",
        model=ScriptedModel([Turn(tool_calls=[Call("refund", {"amount": 42})]), "Refunded."]),
        tools=[refund],
    )
    script = [Turn(tool_calls=[Call("transfer_to_billing", {})])]
    remote_agent = TemporalAgent(Agent("triage", model=ScriptedModel(script), handoffs=[billing]))
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Refund me")
        parked = await remote_agent.settle(client, handle.id)
        [pending] = parked.pending
        assert (parked.status, pending.tool_name) == ("awaiting_approval", "refund")
        await remote_agent.approve(client, handle.id, pending.tool_call_id)
        result = await remote_agent.result(client, handle.id)
        scheduled = await _activities(handle)
    assert (result.status, result.output) == ("completed", "Refunded.")
    # resumed with billing's configuration: its tool and model are billing's activities
    assert scheduled[-2:] == ["bastion.agent.billing.tool", "bastion.agent.billing.model"]


async def test_a_sub_agent_task_tool_runs_the_sub_agent_as_a_child_workflow(
    time_skipping: WorkflowEnvironment,
) -> None:
    local = await boss().run("Ask the explorer")
    remote_agent = TemporalAgent(boss())
    client = time_skipping.client
    async with remote_agent.worker(client):
        handle = await remote_agent.start(client, "Ask the explorer")
        result = await remote_agent.result(client, handle.id)
        [(kind, child_id)] = await _children(handle)
        child = await remote_agent.result(client, child_id)
    assert (result.status, result.output) == ("completed", "The explorer says: It is 7.")
    assert result.output == local.output
    assert kind == "bastion.agent.explorer.child"
    assert child_id == child.run_id  # the child's run id is its workflow's id
    # the child's usage (two model calls) joins the parent's (two), as locally
    assert result.usage.requests == local.usage.requests == 4
    assert result.usage == local.usage


async def test_a_sub_agent_input_filter_gives_the_child_workflow_its_history(
    time_skipping: WorkflowEnvironment,
) -> None:
    local = await filtering_boss().run("The code word is kiwi")
    remote_agent = TemporalAgent(filtering_boss())
    client = time_skipping.client
    async with remote_agent.worker(client):
        result = await remote_agent.run(client, "The code word is kiwi")
    assert result.output == local.output == "The child says: saw The code word is kiwi | Recall"


async def test_first_success_cancels_the_children_still_running(
    time_skipping: WorkflowEnvironment,
) -> None:
    alpha, _, _ = researchers()
    waiting = stalled()
    remote_agent = TemporalAgent(lead(), children=[alpha, waiting])
    client = time_skipping.client
    async with remote_agent.worker(client):
        result = await remote_agent.fan_out(
            client,
            [(alpha, "go"), (waiting, "wait")],
            merge="first_success",
            fan_out_id="fan-first",
        )
        sibling = client.get_workflow_handle("fan-first/stalled")
        cancelled = await sibling.describe()
        scheduled = [
            e.activity_task_scheduled_event_attributes.activity_type.name
            async for e in sibling.fetch_history_events()
            if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
        ]
    assert scheduled == ["bastion.agent.stalled.model"]  # aborted: the model is not asked again
    assert (result.output, result.chosen) == ("Alpha found 1.", "alpha")
    summary = [(c.name, c.status, c.error.code if c.error else None) for c in result.children]
    assert summary == [("alpha", "completed", None), ("stalled", "aborted", "cancelled")]
    # the sibling's workflow was cancelled once the winner was known
    assert cancelled.status == WorkflowExecutionStatus.CANCELED


def test_agents_served_together_register_each_workflow_and_activity_once() -> None:
    triage, billing = triage_desk()
    served = [TemporalAgent(triage), TemporalAgent(billing)]
    workflows, activities = worker_parts([(a.workflows, a.activities) for a in served])
    assert sorted(workflow_name(w) for w in workflows) == [
        "bastion.agent.billing",
        "bastion.agent.billing.child",
        "bastion.agent.billing.fan_out",
        "bastion.agent.triage",
        "bastion.agent.triage.child",
        "bastion.agent.triage.fan_out",
        "bastion.session.billing",
        "bastion.session.triage",
    ]
    assert sorted(activity_name(a) for a in activities) == [
        "bastion.agent.billing.model",
        "bastion.agent.billing.source",
        "bastion.agent.billing.tool",
        "bastion.agent.triage.model",
        "bastion.agent.triage.source",
        "bastion.agent.triage.tool",
    ]


def _office() -> Agent[None, str]:
    """``director`` asks ``manager`` (a sub-agent), who asks ``clerk``, whose refund waits."""

    def clerk_turn(request: ModelRequest) -> Turn:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(text="Refund done.")
        return Turn(tool_calls=[Call("refund", {"amount": 30})])

    def relay(name: str) -> Callable[[ModelRequest], Turn]:
        def turn(request: ModelRequest) -> Turn:
            results = [m for m in request.messages if isinstance(m, ToolMessage)]
            if not results:
                return Turn(tool_calls=[Call(f"task_{name}", {"input": "Refund 30"})])
            return Turn(text=f"{name} says: {results[-1].content}")

        return turn

    clerk = Agent("clerk", model=FunctionModel(clerk_turn), tools=[refund])
    manager = Agent(
        "manager", model=FunctionModel(relay("clerk")), tools=[subagents({"clerk": clerk})]
    )
    return Agent(
        "director", model=FunctionModel(relay("manager")), tools=[subagents({"manager": manager})]
    )


async def test_a_sub_agents_approval_shows_in_the_parents_status_and_is_decided_there(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = TemporalAgent(_office())
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "Refund 30")
        parked = await remote.settle(client, handle.id)  # the clerk, two levels down, waits
        [call] = parked.pending
        [child] = parked.children
        with pytest.raises(UserError, match="No call 'call_nope' is waiting"):
            await remote.approve(client, handle.id, "call_nope")
        assert await remote.approve(client, handle.id, call.tool_call_id) == []
        result = await remote.result(client, handle.id)
        ended = await remote.status(client, handle.id)
    assert (parked.status, call.tool_name, call.arguments) == (
        "awaiting_approval",
        "refund",
        {"amount": 30},
    )
    assert child.agent == "clerk"
    assert child.workflow_id.startswith("run_")  # the clerk's own workflow: decided there
    assert child.workflow_id != handle.id
    assert (result.status, result.output) == (
        "completed",
        "manager says: clerk says: Refund done.",
    )
    assert (ended.status, ended.pending, ended.children) == ("completed", [], [])


async def test_cancelling_a_run_aborts_its_parked_sub_agents(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = TemporalAgent(_office())
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "Refund 30")
        [child] = (await remote.settle(client, handle.id)).children
        await remote.cancel(client, handle.id)
        result = await remote.result(client, handle.id)
        clerk = await client.get_workflow_handle(child.workflow_id).describe()
    assert (result.status, result.output) == ("aborted", None)
    assert clerk.status == WorkflowExecutionStatus.CANCELED  # its refund was never made
