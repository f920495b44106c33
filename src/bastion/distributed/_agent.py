"""``TemporalAgent``: an agent whose runs are Temporal workflows, and the worker that runs them."""

from __future__ import annotations

import uuid
from datetime import timedelta
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from pydantic import TypeAdapter
from temporalio.client import WorkflowUpdateFailedError
from temporalio.common import RetryPolicy
from temporalio.worker import Worker

from bastion.agent import RetryConfig
from bastion.core import UserError
from bastion.tools import ApprovalDecision

from ._activities import model_activity, tool_activity
from ._code_mode import worker_tools
from ._compaction import activity_models
from ._proxies import Activities
from ._source_worker import source_activity
from ._tool_remote import WorkerSide
from ._views import (
    WorkflowResult,
    WorkflowStatus,
    decisions_adapter,
    result_adapter,
    status_adapter,
)
from ._workflow import agent_workflow

if TYPE_CHECKING:
    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import Agent, RunConfig

__all__ = ["TemporalAgent"]

OutputT = TypeVar("OutputT")


class TemporalAgent(Generic[OutputT]):
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

    Raises:
        UserError: The agent uses a part that does not run on Temporal yet (see
            ``docs/scale-out.md``).
    """

    def __init__(
        self,
        agent: Agent[Any, OutputT],
        *,
        task_queue: str | None = None,
        activity_timeout: float = 300.0,
        heartbeat_timeout: float | None = None,
    ) -> None:
        _check_supported(agent.config)
        if activity_timeout <= 0:
            raise UserError(f"activity_timeout must be > 0 seconds, got {activity_timeout!r}.")
        if heartbeat_timeout is not None and heartbeat_timeout <= 0:
            raise UserError(f"heartbeat_timeout must be > 0 seconds, got {heartbeat_timeout!r}.")
        self.agent = agent
        self.task_queue = task_queue or f"bastion.{agent.name}"
        self.workflow_name = f"bastion.agent.{agent.name}"
        config = agent.config
        activities = Activities(
            model=f"{self.workflow_name}.model",
            tool=f"{self.workflow_name}.tool",
            source=f"{self.workflow_name}.source",
            timeout=timedelta(seconds=activity_timeout),
            heartbeat=None if heartbeat_timeout is None else timedelta(seconds=heartbeat_timeout),
            retry=_retry_policy(config.retry or RetryConfig()),
            no_retry=RetryPolicy(maximum_attempts=1),
        )
        beat = None if heartbeat_timeout is None else heartbeat_timeout / 3
        self.workflow = agent_workflow(agent, self.workflow_name, activities)
        """The workflow class (register it on your own ``Worker`` if you build one)."""
        self.activities = (
            model_activity(activities.model, activity_models(config), beat),
            tool_activity(
                activities.tool,
                worker_tools(config),
                beat,
                _worker_side(config),
                config.tool_sources.sources,
            ),
            source_activity(activities.source, config.tool_sources.sources),
        )
        """The activity functions (register them with the workflow)."""
        self._output: TypeAdapter[Any] = TypeAdapter(config.output_type)

    def worker(self, client: Client, **options: Any) -> Worker:
        """A worker for this agent's workflow and activities (``options`` go to ``Worker``)."""
        return Worker(
            client,
            task_queue=self.task_queue,
            workflows=[self.workflow],
            activities=list(self.activities),
            **options,
        )

    async def start(
        self, client: Client, prompt: str, *, workflow_id: str | None = None
    ) -> WorkflowHandle[Any, str]:
        """Start a run of the agent as a workflow and return its handle."""
        if not isinstance(prompt, str) or not prompt.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError("TemporalAgent.start needs a non-empty prompt.")
        return await client.start_workflow(
            self.workflow_name,
            prompt,
            id=workflow_id or f"{self.agent.name}-{uuid.uuid4().hex}",
            task_queue=self.task_queue,
            result_type=str,
        )

    async def run(
        self, client: Client, prompt: str, *, workflow_id: str | None = None
    ) -> WorkflowResult[OutputT]:
        """Start a run and wait for its end (through any approvals it waits for)."""
        handle = await self.start(client, prompt, workflow_id=workflow_id)
        return self._result(await handle.result())

    async def result(self, client: Client, workflow_id: str) -> WorkflowResult[OutputT]:
        """Wait for the end of the run ``workflow_id``."""
        handle = client.get_workflow_handle(workflow_id, result_type=str)
        return self._result(await handle.result())

    async def status(self, client: Client, workflow_id: str) -> WorkflowStatus:
        """What the run ``workflow_id`` is doing: status, pending approvals, usage so far."""
        handle = client.get_workflow_handle(workflow_id)
        return status_adapter().validate_json(await handle.query("status", result_type=str))

    async def settle(self, client: Client, workflow_id: str) -> WorkflowStatus:
        """Wait until the run ``workflow_id`` parks for a decision or ends; its status."""
        handle = client.get_workflow_handle(workflow_id)
        text: str = await handle.execute_update("settle", result_type=str)  # pyright: ignore[reportUnknownMemberType]
        return status_adapter().validate_json(text)

    async def decide(
        self, client: Client, workflow_id: str, *decisions: ApprovalDecision
    ) -> list[str]:
        """Decide pending calls of a parked run; returns the ids still waiting.

        The run resumes once every pending call is decided.

        Raises:
            UserError: No decision, or the workflow refused them (a call not waiting, or
                already decided).
        """
        if not decisions:
            raise UserError("TemporalAgent.decide needs at least one ApprovalDecision.")
        payload = decisions_adapter().dump_json(list(decisions)).decode()
        handle = client.get_workflow_handle(workflow_id)
        try:
            waiting: list[str] = await handle.execute_update(  # pyright: ignore[reportUnknownMemberType]
                "decide", payload, result_type=list[str]
            )
        except WorkflowUpdateFailedError as error:
            cause = error.cause
            raise UserError(str(getattr(cause, "message", cause))) from None
        return waiting

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


def _worker_side(config: RunConfig) -> WorkerSide:
    """What the tools' ``RunContext`` takes from the worker's own copy of the agent."""
    return WorkerSide(deps=config.deps, runtime=config.runtime, sandbox=config.sandbox)


def _retry_policy(retry: RetryConfig) -> RetryPolicy:
    """The activity retry policy of the agent's model retry settings."""
    initial = max(retry.initial_delay, 0.001)
    return RetryPolicy(
        initial_interval=timedelta(seconds=initial),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=max(retry.max_delay, initial)),
        maximum_attempts=retry.max_retries + 1,
    )


def _check_supported(config: RunConfig) -> None:
    """Refuse, by name, what the workflow cannot run yet (before anything is registered)."""
    refused = [
        reason
        for reason, present in (("governance (policies, budgets)", config.governance is not None),)
        if present
    ]
    if refused:
        raise UserError(
            f"Agent {config.name!r} cannot run on Temporal yet: it uses "
            + "; ".join(refused)
            + ". See docs/scale-out.md for what runs as a workflow."
        )
