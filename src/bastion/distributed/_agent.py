"""``TemporalAgent``: an agent whose runs are Temporal workflows, and the worker that runs them."""

from __future__ import annotations

from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar, cast

from pydantic import TypeAdapter
from temporalio.client import WorkflowExecutionStatus
from temporalio.common import RetryPolicy
from temporalio.service import RPCError
from temporalio.worker import Worker

from bastion.agent import RetryConfig
from bastion.core import UserError
from bastion.tools import ApprovalDecision

from ._below import route
from ._fan_out_client import check_merges
from ._following import event_channel, follow_events, publishing
from ._governance import counter_stores, counters_activity
from ._interrupts import InterruptClient
from ._multi import FanOutMethods, multi_agent_refusals, registrations
from ._proxies import Activities
from ._reach import hosted, reachable, retry_policy
from ._session import TemporalSession, open_session
from ._session_workflow import session_workflow
from ._shared import cancel_workflow, send_decisions, start_run
from ._views import (
    WorkflowResult,
    WorkflowStatus,
    result_adapter,
    status_adapter,
)
from ._workflow import agent_workflow

if TYPE_CHECKING:
    from collections.abc import AsyncIterator, Mapping, Sequence

    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import Agent, RunConfig
    from bastion.core import AgentEvent
    from bastion.multi._merge import Merge
    from bastion.stores import Stores

    from ._events import EventChannel

__all__ = ["TemporalAgent"]

OutputT = TypeVar("OutputT")


class TemporalAgent(InterruptClient, FanOutMethods, Generic[OutputT]):
    """Runs an :class:`~bastion.Agent` as a durable Temporal workflow.

    The agent's loop runs as workflow code; each model call and each tool call is an activity
    any worker on the task queue may run. Build one at import time of a module both the
    client and the workers import, and run ``worker(client)`` in each worker process.

    Args:
        agent: The agent (its name names the workflow, ``bastion.agent.<name>``).
        task_queue: The queue the workers poll (default ``bastion.<agent name>``).
        activity_timeout: Seconds one model or tool call may take (a tool's own
            ``timeout`` wins for its calls).
        heartbeat_timeout: Seconds without a heartbeat after which the worker of a model or
            tool call is taken for lost (``None``: only ``activity_timeout`` tells).
        counters: For an agent with governance (policies, budget): the store every worker
            counts its limits in (a ``postgresql://``, ``redis://`` or ``sqlite:///`` URL,
            or a ``Stores``); the agent's own store when omitted.
        children: Agents its fan-outs run (:meth:`fan_out`); handoff targets and
            sub-agents are found on their own.
        merges: Merge strategies fan-outs may name (functions, ``Judge`` with a function
            judge), by name: the workers run the merge.
        events: Where runs publish their live events (a ``Stores`` or a store URL), for
            :meth:`stream`, :meth:`follow` and the HTTP server; ``None``: the agent's own
            store, and without one the events are not published.

    Raises:
        UserError: The agent uses a part that does not run on Temporal yet (see
            ``docs/scale-out.md``), or has governance and no shared counter store.
    """

    def __init__(
        self,
        agent: Agent[Any, OutputT],
        *,
        task_queue: str | None = None,
        activity_timeout: float = 300.0,
        heartbeat_timeout: float | None = None,
        counters: str | Stores | None = None,
        children: Sequence[Agent[Any, Any]] = (),
        merges: Mapping[str, Merge] | None = None,
        events: Stores | str | None = None,
    ) -> None:
        root = hosted(agent)
        reach = reachable(root, children)
        for reached in reach.values():
            _check_supported(reached.config)
        stores = counter_stores(root, counters)
        if activity_timeout <= 0:
            raise UserError(f"activity_timeout must be > 0 seconds, got {activity_timeout!r}.")
        if heartbeat_timeout is not None and heartbeat_timeout <= 0:
            raise UserError(f"heartbeat_timeout must be > 0 seconds, got {heartbeat_timeout!r}.")
        self.agent = agent
        self._host = root
        self.task_queue = task_queue or f"bastion.{agent.name}"
        self.workflow_name = f"bastion.agent.{agent.name}"
        config = agent.config
        self.events = event_channel(events, root)
        """The store the runs' events go to (``None``: they are not published)."""
        activities = Activities(
            model=f"{self.workflow_name}.model",
            tool=f"{self.workflow_name}.tool",
            source=f"{self.workflow_name}.source",
            timeout=timedelta(seconds=activity_timeout),
            heartbeat=None if heartbeat_timeout is None else timedelta(seconds=heartbeat_timeout),
            retry=retry_policy(config.retry or RetryConfig()),
            no_retry=RetryPolicy(maximum_attempts=1),
            counters="" if stores is None else f"{self.workflow_name}.counters",
            publish=None if self.events is None else f"{self.workflow_name}.events",
        )
        beat = None if heartbeat_timeout is None else heartbeat_timeout / 3
        self.workflow = agent_workflow(root, self.workflow_name, activities)
        """The workflow class (register it on your own ``Worker`` if you build one)."""
        self.session_workflow_name = f"bastion.session.{agent.name}"
        self.session_workflow = session_workflow(root, self.session_workflow_name, activities)
        """The session workflow class (register it too: see :meth:`session`)."""
        self.reach = reach
        """Every agent a run may come to run (handoffs, sub-agents, ``children``), by name."""
        self.merges = check_merges(f"TemporalAgent({agent.name!r})", merges)
        self.workflows, functions = registrations(
            reach, (self.workflow, self.session_workflow), activities, self.merges, beat
        )
        self.activities = (
            *functions,
            *(() if stores is None else (counters_activity(activities.counters, stores),)),
            *publishing(activities.publish, self.events),
        )
        """The workflow classes and activity functions (register them on your own ``Worker``)."""
        self.counters = stores
        """The store the workers count governance limits in (``None``: no governance)."""
        # the agent's output type is OutputT: the adapter validates into it
        self._output = cast("TypeAdapter[OutputT]", TypeAdapter(config.output_type))

    def worker(self, client: Client, **options: Any) -> Worker:
        """A worker for this agent's workflow and activities (``options`` go to ``Worker``)."""
        return Worker(
            client,
            task_queue=self.task_queue,
            workflows=list(self.workflows),
            activities=list(self.activities),
            **options,
        )

    async def start(
        self, client: Client, prompt: str, *, workflow_id: str | None = None
    ) -> WorkflowHandle[object, str]:
        """Start a run of the agent as a workflow and return its handle."""
        if not isinstance(prompt, str) or not prompt.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("TemporalAgent.start needs a non-empty prompt.")
        return await start_run(
            client,
            self.workflow_name,
            prompt,
            workflow_id=workflow_id,
            id_prefix=self.agent.name,
            task_queue=self.task_queue,
        )

    async def run(
        self, client: Client, prompt: str, *, workflow_id: str | None = None
    ) -> WorkflowResult[OutputT]:
        """Start a run and wait for its end (through any approvals it waits for)."""
        handle = await self.start(client, prompt, workflow_id=workflow_id)
        return self._result(await handle.result())

    def stream(
        self, client: Client, prompt: str, *, workflow_id: str | None = None, poll: float = 0.1
    ) -> AsyncIterator[AgentEvent]:
        """Start a run and yield its events as the workers publish them.

        The same events a local ``agent.stream`` yields, in order, each once; the stream
        ends where a local one does: at ``agent.end`` (the run ended or parked for a
        decision). ``poll``: seconds between reads of the event store.

        Raises:
            UserError: No event store (see ``events``), or an empty prompt.
        """
        channel = self._channel()

        async def started() -> str:
            return (await self.start(client, prompt, workflow_id=workflow_id)).id

        return follow_events(channel, client, started(), after=0, poll=poll)

    def follow(
        self, client: Client, workflow_id: str, *, after: int = 0, poll: float = 0.1
    ) -> AsyncIterator[AgentEvent]:
        """Yield the events of the run ``workflow_id`` with ``seq > after`` (see :meth:`stream`).

        Any process on the event store may follow, from any seq: reconnect with the seq of
        the last event seen.

        Raises:
            UserError: No event store, ``after`` < 0, or no such workflow.
        """
        channel = self._channel()
        if after < 0:
            raise UserError(f"after must be an event seq >= 0, got {after!r}.")
        return follow_events(channel, client, _ready(workflow_id), after=after, poll=poll)

    async def aclose(self) -> None:
        """Close the event store, when this agent opened it from a URL."""
        if self.events is not None:
            await self.events.close()

    def _channel(self) -> EventChannel:
        if self.events is None:
            raise UserError(
                f"TemporalAgent {self.agent.name!r} publishes no events: give it "
                "events='sqlite:///runs.db' (or the agent a store), on workers and clients."
            )
        return self.events

    async def result(self, client: Client, workflow_id: str) -> WorkflowResult[OutputT]:
        """Wait for the end of the run ``workflow_id``."""
        handle = client.get_workflow_handle(workflow_id, result_type=str)
        return self._result(await handle.result())

    async def status(
        self, client: Client, workflow_id: str, *, rpc_timeout: timedelta | None = None
    ) -> WorkflowStatus:
        """What the run ``workflow_id`` is doing: status, pending approvals, usage so far.

        A worker answers (the ``status`` query); ``rpc_timeout`` bounds the wait for one.
        """
        handle = client.get_workflow_handle(workflow_id)
        text = await handle.query("status", result_type=str, rpc_timeout=rpc_timeout)
        return status_adapter().validate_json(text)

    async def settle(self, client: Client, workflow_id: str) -> WorkflowStatus:
        """Wait until the run ``workflow_id`` parks for a decision or ends; its status.

        A run that ends as the update arrives (Temporal refuses an update to a closing
        workflow) is answered from its result.
        """
        handle = client.get_workflow_handle(workflow_id)
        try:
            text: str = await handle.execute_update("settle", result_type=str)  # pyright: ignore[reportUnknownMemberType]
        except RPCError:
            described = await handle.describe()
            if described.status == WorkflowExecutionStatus.RUNNING:
                raise
            result = await self.result(client, workflow_id)
            return WorkflowStatus(status=result.status, usage=result.usage)
        return status_adapter().validate_json(text)

    async def cancel(self, client: Client, workflow_id: str) -> None:
        """Cancel the run ``workflow_id``: it ends ``aborted``, as a local run's ``abort()``.

        Returns once Temporal has the request; ``result`` then waits for the run's end. The
        workflow stops waiting for the call at work (the activity itself learns it at its
        next heartbeat: give ``heartbeat_timeout`` for long tools) and a parked run's
        pending calls and interrupts are denied. ``temporal workflow cancel`` does the
        same. A closed workflow is left as it is.

        Raises:
            UserError: No workflow has the id ``workflow_id``.
        """
        await cancel_workflow(client, workflow_id)

    async def decide(
        self, client: Client, workflow_id: str, *decisions: ApprovalDecision
    ) -> list[str]:
        """Decide pending calls of a parked run; returns the ids still waiting.

        The run resumes once every pending call is decided. A call of a sub-agent below the
        run (in its status's ``children``) is decided in the sub-agent's workflow.

        Raises:
            UserError: No decision, or the workflow refused them (a call not waiting, or
                already decided).
        """
        return await route(
            client, workflow_id, self.status, decisions, lambda d: d.tool_call_id,
            lambda handle, group: send_decisions(handle, group, "TemporalAgent.decide"),
            calls=True,
        )  # fmt: skip

    async def approve(self, client: Client, workflow_id: str, call_id: str) -> list[str]:
        """Approve one pending call (see :meth:`decide`)."""
        return await self.decide(
            client, workflow_id, ApprovalDecision(tool_call_id=call_id, granted=True)
        )

    async def deny(
        self, client: Client, workflow_id: str, call_id: str, reason: str | None = None
    ) -> list[str]:
        """Deny one pending call; the model reads ``reason`` (see :meth:`decide`)."""
        decision = ApprovalDecision(tool_call_id=call_id, granted=False, reason=reason)
        return await self.decide(client, workflow_id, decision)

    async def session(
        self, client: Client, session_id: str, *, continue_after: int = 10_000
    ) -> TemporalSession:
        """Open the session ``session_id``: one long-lived workflow (started if need be).

        ``continue_after``: the history length (events) after which the workflow continues
        as new between two turns, carrying the transcript, usage and waiting messages. An
        agent with governance counts its limits in the ``counters`` store every worker
        shares; a turn that reaches a mutable limit parks until the session's
        ``raise_budget`` or ``resolve`` decides it. With an event store (``events``), the
        session's turns publish their events: ``TemporalSession.follow`` reads them.
        """

        def follower(workflow_id: str, after: int, poll: float) -> AsyncIterator[AgentEvent]:
            return self.follow(client, workflow_id, after=after, poll=poll)

        return await open_session(
            client,
            workflow=self.session_workflow_name,
            task_queue=self.task_queue,
            session_id=session_id,
            send_mode=self.agent.config.session_send_mode,
            continue_after=continue_after,
            follower=None if self.events is None else follower,
        )

    def _result(self, text: str) -> WorkflowResult[OutputT]:
        raw = result_adapter().validate_json(text)
        output = None if raw.output is None else self._output.validate_python(raw.output)
        return WorkflowResult(
            workflow_id=raw.workflow_id,
            run_id=raw.run_id,
            status=raw.status,
            output=output,
            text=raw.text,
            usage=raw.usage,
            steps=raw.steps,
            error=raw.error,
        )


async def _ready(workflow_id: str) -> str:
    return workflow_id


def _check_supported(config: RunConfig) -> None:
    """Refuse, by name, what the workflow cannot run yet (before anything is registered)."""
    refused = multi_agent_refusals(config)
    if refused:
        raise UserError(
            f"Agent {config.name!r} cannot run on Temporal yet: it uses "
            + "; ".join(refused)
            + ". See docs/scale-out.md for what runs as a workflow."
        )
