"""Graphs run as Temporal workflows, on the time-skipping test server."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from temporalio.api.enums.v1 import EventType
from temporalio.client import WorkflowHandle, WorkflowUpdateFailedError
from temporalio.testing import WorkflowEnvironment
from temporalio.worker import Replayer

from bastion import Agent, UserError
from bastion.core import ModelRequest, ToolMessage
from bastion.distributed import TemporalAgent, TemporalGraph
from bastion.graph import Graph, NodeContext, RetryPolicy
from bastion.testing import Call, FunctionModel, Turn

from ._agents import send_email
from ._graphs import counter, pipeline, review, squares, with_agent


async def _scheduled(handle: WorkflowHandle[Any, str]) -> tuple[list[str], list[str]]:
    """The activities' summaries (node runs) and the child workflows' ids, in order."""
    history = await handle.fetch_history()
    nodes = [
        e.user_metadata.summary.data.decode().strip('"')
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_ACTIVITY_TASK_SCHEDULED
    ]
    children = [
        e.start_child_workflow_execution_initiated_event_attributes.workflow_id
        for e in history.events
        if e.event_type == EventType.EVENT_TYPE_START_CHILD_WORKFLOW_EXECUTION_INITIATED
    ]
    return nodes, children


async def test_a_dag_runs_as_a_workflow_with_each_node_an_activity(
    time_skipping: WorkflowEnvironment,
) -> None:
    local = await pipeline().run(4)
    remote = TemporalGraph(pipeline())
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, 4)
        result = await remote.result(client, handle.id)
        status = await remote.status(client, handle.id)
        nodes, _ = await _scheduled(handle)
    assert (result.status, result.output, result.rounds) == ("completed", 24, 1)
    assert result.output == local.output
    assert result.outputs == {"start": {"n": 4}, "double": 8, "square": 16, "join": 24}
    assert result.workflow_id == handle.id
    assert status.status == "completed"
    assert status.nodes == {f"{k}@0": "finished" for k in ("start", "double", "square", "join")}
    assert (nodes[0], sorted(nodes[1:3]), nodes[-1]) == (
        "start@0",
        ["double@0", "square@0"],
        "join@0",
    )
    # the scheduler is deterministic workflow code: its history replays without divergence
    replayed = await Replayer(workflows=remote.workflows).replay_workflow(
        await handle.fetch_history()
    )
    assert replayed.replay_failure is None


async def test_a_cycle_runs_its_rounds_in_one_workflow(time_skipping: WorkflowEnvironment) -> None:
    remote = TemporalGraph(counter())
    client = time_skipping.client
    async with remote.worker(client):
        result = await remote.run(client, 0)
        status = await remote.status(client, result.workflow_id)
        settled = await remote.settle(client, result.workflow_id)  # closed: no update runs
    assert (result.status, result.output, result.rounds) == ("completed", "reached 3", 3)
    assert list(status.nodes) == ["inc@0", "inc@1", "inc@2", "done@2"]
    assert settled == status


async def test_a_map_node_fans_out_one_child_workflow_per_element(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = TemporalGraph(squares())
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, [1, 2, 3])
        result = await remote.result(client, handle.id)
        status = await remote.status(client, handle.id)
        _, children = await _scheduled(handle)
    assert (result.status, result.output) == ("completed", 14)
    assert status.children == {"each@0": children}
    assert result.outputs["each"] == [1, 4, 9]
    assert children == [f"{handle.id}/each@0[{i}]" for i in range(3)]
    child = await remote.result(client, children[2])
    assert (child.graph, child.output) == ("square_one", 9)


async def test_an_agent_node_runs_as_the_agents_own_child_workflow(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = TemporalGraph(with_agent())
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, 2)
        result = await remote.result(client, handle.id)
        nodes, children = await _scheduled(handle)
    assert (result.status, result.output) == ("completed", "THE SUM IS 5.")
    assert children == [f"{handle.id}/adder@0"]
    assert nodes == ["ask@0", "shout@0"]  # the agent's own calls are in its workflow


async def test_a_paused_node_parks_the_workflow_until_an_update_answers_it(
    time_skipping: WorkflowEnvironment,
) -> None:
    remote = TemporalGraph(review())
    client = time_skipping.client
    # no cache: every workflow task replays the history (the test server keeps no sticky
    # queue's timeout, so a cached workflow would wait for this worker after it stopped)
    async with remote.worker(client, max_cached_workflows=0):
        handle = await remote.start(client, "")
        parked = await remote.settle(client, handle.id)
        assert parked.status == "paused"
        [asked] = parked.pending
        assert (asked.node_id, asked.payload, asked.reason) == (
            "title@0",
            {"missing": "title"},
            "name it",
        )
        assert parked.nodes == {"title@0": "paused"}
    async with remote.worker(client):  # the parked workflow outlives its worker, rebuilt
        with pytest.raises(UserError, match=r"No node 'review@0' is waiting"):
            await remote.answer(client, handle.id, "review@0", "yes")
        assert await remote.answer(client, handle.id, "title@0", "Temporal") == []
        parked = await remote.settle(client, handle.id)
        [asked] = parked.pending
        assert (asked.node_id, asked.payload) == ("review@0", {"draft": "Draft on Temporal"})
        assert parked.nodes["title@0"] == "finished"
        await remote.answer(client, handle.id, "review@0", "approved")
        result = await remote.result(client, handle.id)
    assert (result.status, result.output) == ("completed", "Draft on Temporal [approved]")


async def test_a_failing_node_is_retried_then_fails_the_graph_naming_its_error(
    time_skipping: WorkflowEnvironment,
) -> None:
    tries: list[int] = []

    def flaky(inputs: list[Any]) -> int:
        tries.append(1)
        if len(tries) < 3:
            raise ConnectionError(f"try {len(tries)} failed")
        return inputs[0]

    def broken(inputs: list[Any]) -> int:
        raise ValueError(f"cannot use {inputs[0]}")

    graph = Graph("flaky").add_node("flaky", flaky).add_node("broken", broken)
    graph.add_edge("flaky", "broken")
    remote = TemporalGraph(
        graph,
        retry=RetryPolicy(max_attempts=3, backoff=0.5),
        retries={"broken": RetryPolicy(max_attempts=1)},
    )
    client = time_skipping.client
    async with remote.worker(client):
        result = await remote.run(client, 7)
        status = await remote.status(client, result.workflow_id)
    assert len(tries) == 3  # two failures, then the third try of its retry policy
    assert result.status == "failed"
    assert result.outputs == {"flaky": 7}
    assert result.errors == {"broken": "ValueError: cannot use 7"}
    assert status.nodes == {"flaky@0": "finished", "broken@0": "failed"}


def test_bad_settings_are_refused_before_anything_is_registered() -> None:
    with pytest.raises(UserError, match=r"retries names no node: 'nope'"):
        TemporalGraph(pipeline(), retries={"nope": RetryPolicy()})
    with pytest.raises(UserError, match=r"activity_timeout must be > 0"):
        TemporalGraph(pipeline(), activity_timeout=0)
    twin = Graph("square_one").add_node("x", lambda inputs: inputs)
    clash = squares().add_map("again", twin)
    with pytest.raises(UserError, match=r"Two different graphs are named 'square_one'"):
        TemporalGraph(clash)


async def test_a_node_that_pauses_twice_runs_again_with_each_answer_in_order(
    time_skipping: WorkflowEnvironment,
) -> None:
    runs: list[list[str]] = []

    async def form(inputs: list[Any], ctx: NodeContext) -> str:
        runs.append([])
        name = await ctx.pause("name?")
        assert isinstance(name, str)
        runs[-1].append(name)
        city = await ctx.pause({"asked": name}, reason="city?")
        return f"{inputs[0]}: {name} from {city}"

    remote = TemporalGraph(Graph("form").add_node("form", form))
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "card")
        first = await remote.settle(client, handle.id)
        await remote.answer(client, handle.id, "form@0", "Ada")
        second = await remote.settle(client, handle.id)
        with pytest.raises(WorkflowUpdateFailedError) as refused:
            await client.get_workflow_handle(handle.id).execute_update(  # pyright: ignore[reportUnknownMemberType]
                "answer", args=["form@0", "{oops"], result_type=list[str]
            )
        assert "The answer to 'form@0' is not JSON" in str(refused.value.cause)
        await remote.answer(client, handle.id, "form@0", "London")
        result = await remote.result(client, handle.id)
    assert [(p.payload, p.reason) for p in first.pending] == [("name?", "")]
    assert [(p.payload, p.reason) for p in second.pending] == [({"asked": "Ada"}, "city?")]
    assert result.output == "card: Ada from London"
    assert runs == [[], ["Ada"], ["Ada"]]  # from its start each time, each answer in order


async def test_an_agent_nodes_approval_is_decided_on_its_child_workflow(
    time_skipping: WorkflowEnvironment,
) -> None:
    asked = asyncio.Event()
    remote = TemporalGraph(Graph("mail_graph").add_node("mail", _mail(asked)))
    decider = TemporalAgent(_mail(asked), task_queue=remote.task_queue)
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "Mail Bob")
        await asked.wait()  # the child workflow runs
        status = await remote.status(client, handle.id)
        [child] = status.children["mail@0"]
        parked = await decider.settle(client, child)
        [pending] = parked.pending
        await decider.approve(client, child, pending.tool_call_id)
        result = await remote.result(client, handle.id)
    assert (status.status, status.nodes) == ("running", {"mail@0": "running"})
    assert child == f"{handle.id}/mail@0"
    assert (parked.status, pending.tool_name) == ("awaiting_approval", "send_email")
    assert (result.status, result.output) == ("completed", "Done.")


async def test_a_cancelled_execution_stops_its_running_node_and_starts_no_other(
    time_skipping: WorkflowEnvironment,
) -> None:
    started, stopped, ran = asyncio.Event(), asyncio.Event(), list[str]()

    async def watch(inputs: list[Any]) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            stopped.set()
            raise
        return "never"

    graph = Graph("watch_graph")
    graph.add_node("watch", watch)
    graph.add_node("after", lambda inputs: ran.append("after"))
    graph.add_edge("watch", "after")
    remote = TemporalGraph(graph, heartbeat_timeout=1)
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "x")
        await started.wait()
        await remote.cancel(client, handle.id)
        result = await remote.result(client, handle.id)
        await stopped.wait()  # the node's activity was cancelled at its next heartbeat
        with pytest.raises(UserError, match="No run 'graph-nope' on Temporal"):
            await remote.cancel(client, "graph-nope")
        status = await remote.status(client, handle.id)
    assert (result.status, result.errors, ran) == ("aborted", {}, [])
    assert (status.status, status.nodes) == ("aborted", {"watch@0": "failed"})


def _mail(asked: asyncio.Event) -> Agent[None, str]:
    """``mail`` asks to send an email (approval needed); ``asked`` is set by its model."""

    def answer(request: ModelRequest) -> Turn:
        asked.set()  # its workflow exists: its model activity runs
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(text="Done.")
        return Turn(tool_calls=[Call("send_email", {"to": "bob@example.com", "body": "Hi"})])

    return Agent("mail", model=FunctionModel(answer), tools=[send_email])


async def test_a_cancelled_execution_aborts_its_agent_nodes_parked_workflow(
    time_skipping: WorkflowEnvironment,
) -> None:
    asked = asyncio.Event()
    mail = _mail(asked)
    remote = TemporalGraph(Graph("mail_graph").add_node("mail", mail))
    child_agent = TemporalAgent(mail, task_queue=remote.task_queue)
    client = time_skipping.client
    async with remote.worker(client):
        handle = await remote.start(client, "Mail Bob")
        await asked.wait()
        child = f"{handle.id}/mail@0"
        assert (await child_agent.settle(client, child)).status == "awaiting_approval"
        await remote.cancel(client, handle.id)
        result = await remote.result(client, handle.id)
        aborted = await child_agent.result(client, child)
    assert (result.status, result.errors) == ("aborted", {})
    assert (aborted.status, aborted.output) == ("aborted", None)  # the email was never sent
