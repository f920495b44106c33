"""Child workflows: a sub-agent's run, or a fan-out child's, as a workflow of its own.

Every agent a ``TemporalAgent`` reaches gets a child workflow type,
``bastion.agent.<name>.child``. A parent starts one per sub-agent call (the
``task_<name>`` / ``as_tool`` tool, :func:`subagent_tool`) and per fan-out child
(``_fanout.py``); its id is the child's run id, derived from the parent's, so a replayed
parent finds the child it started instead of starting another. The child runs its agent
with activity models and tools, as the parent does, and returns a :class:`ChildOutcome`:
status, output, text, usage (per model too), the text of each turn, and whether it read
untrusted content.

- A **sub-agent** child parks like a top-level run when it waits for an approval: its own
  ``status`` query and ``decide`` update serve it (the parent's call waits meanwhile).
- A **fan-out** child runs under its :class:`~bastion.agent.ChildBudget`, enforced inside
  the child workflow as it is locally (tool calls refused past the budget, tokens checked
  after each model call, the duration a durable timer); one that waits for an approval
  ends with that status, as a local fan-out child does.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from pydantic_core import to_jsonable_python
from temporalio import workflow

from bastion.agent._capability import ReadOnlyCatalog
from bastion.core import TextCompleteEvent, id_source, messages_adapter
from bastion.multi import FanOutChild
from bastion.multi._multi_child import ChildHandle, run_child

from ._child_wire import (
    ChildOutcome,
    ChildRequest,
    child_workflow_name,
    outcome_adapter,
    request_adapter,
)
from ._proxies import WorkflowClock
from ._shared import cancel_as_abort, define_workflow
from ._views import WorkflowStatus
from ._wiring import workflow_config
from ._workflow import AgentWorkflow

if TYPE_CHECKING:
    from collections.abc import Sequence

    from bastion.agent import Agent, RunConfig, RunResult
    from bastion.agent._stream import AgentStream
    from bastion.core import AgentEvent

    from ._proxies import Activities

__all__ = ["ChildWorkflow", "child_workflow"]


class ChildWorkflow(AgentWorkflow):
    """The child workflow of one agent; :func:`child_workflow` makes one subclass per agent."""

    def __init__(self) -> None:
        super().__init__()
        self._child: ChildHandle | None = None  # a budgeted child's grip on its run

    async def execute_child(self, text: str) -> str:
        """Run the agent for the parent, to its end; a cancellation aborts the run first.

        The parent cancels a child when a sibling won ``first_success`` or the fan-out
        was cancelled: the run is aborted through the loop (no further model call), then
        the workflow ends CANCELED, which the parent reads as an aborted child.
        """
        return await cancel_as_abort(self._execute_child(text), self.abort, then_raise=True)

    def abort(self) -> None:
        """Abort the run, a budgeted child's through its handle."""
        super().abort()
        if self._child is not None:
            self._child.cancel()

    async def _execute_child(self, text: str) -> str:
        """Run the agent for the parent, to its end (parking for approvals as a sub-agent)."""
        request = request_adapter().validate_json(text)
        parent = workflow.info().parent
        if request.kind != "fan_out" and parent is not None:  # its waits show in the parent
            self.report_to(parent.workflow_id)
        config = workflow_config(self.agent.config, self.activities, self._usage)
        if request.capability == "read_only" and not isinstance(config.catalog, ReadOnlyCatalog):
            catalog = ReadOnlyCatalog(config.catalog)
            config = replace(config, catalog=catalog, tools=catalog.current())
        run_id = workflow.info().workflow_id
        with id_source(lambda: workflow.uuid4().hex):
            if request.kind == "fan_out":
                outcome = await self._budgeted(config, request, run_id)
            else:
                outcome = await self._parking(config, request, run_id)
        self._status = WorkflowStatus(status=outcome.status, usage=outcome.usage)  # type: ignore[arg-type]
        await workflow.wait_condition(workflow.all_handlers_finished)
        return outcome_adapter().dump_json(outcome).decode()

    async def _parking(self, config: RunConfig, request: ChildRequest, run_id: str) -> ChildOutcome:
        agent = self.agent
        texts: list[str] = []
        history = request.history
        stream = agent.stream(
            request.input,
            message_history=None if history is None else messages_adapter().validate_json(history),
            metadata=dict(request.metadata),
            config=config,
            run_id=run_id,
        )
        with self.tracking(stream):
            result = await _drained(stream, texts)
        while result.status == "awaiting_approval":
            directive = await self.decisions(result)
            stream = agent.stream(result.state, directive=directive, config=config)
            with self.tracking(stream):
                result = await _drained(stream, texts)
        return _outcome_of(result, texts)

    async def _budgeted(
        self, config: RunConfig, request: ChildRequest, run_id: str
    ) -> ChildOutcome:
        texts: list[str] = []
        bound = _Bound(self.agent, config)
        child = FanOutChild(bound, request.input, name=request.label)

        def collect(event: AgentEvent) -> None:
            if isinstance(event, TextCompleteEvent) and event.text:
                texts.append(event.text)

        self._child = handle = ChildHandle()
        if self._aborted:
            handle.cancel()
        result = await run_child(
            child,
            0,
            handle,
            request.budget,
            None,
            WorkflowClock(),
            dict(request.metadata),
            run_id=run_id,
            on_event=collect,
        )
        return ChildOutcome(
            run_id=result.run_id or run_id,
            agent_name=self.agent.name,
            status=result.status,
            output=to_jsonable_python(result.output),
            text=result.text,
            texts=texts,
            error=result.error,
            usage=result.usage,
            steps=len(texts),
            untrusted=result.untrusted,
        )


class _Bound:
    """An agent whose fan-out runs take its workflow configuration (``run_child`` needs one)."""

    __slots__ = ("_agent", "config")

    def __init__(self, agent: Agent[object, object], config: RunConfig) -> None:
        self._agent = agent
        self.config = config

    @property
    def name(self) -> str:
        return self._agent.name

    def stream(
        self,
        input: str,
        *,
        metadata: dict[str, Any] | None = None,
        config: RunConfig | None = None,
        run_id: str | None = None,
    ) -> AgentStream[object]:
        return self._agent.stream(input, metadata=metadata, config=config, run_id=run_id)


async def _drained(stream: AgentStream[object], texts: list[str]) -> RunResult[object]:
    texts.extend([e.text async for e in stream if isinstance(e, TextCompleteEvent) and e.text])
    return stream.result


def _outcome_of(result: RunResult[object], texts: Sequence[str]) -> ChildOutcome:
    state = result.state
    return ChildOutcome(
        run_id=result.run_id,
        agent_name=result.last_agent,
        status=result.status,
        output=to_jsonable_python(result.output),
        text=result.text,
        texts=list(texts),
        error=result.error,
        stop_reason=result.stop_reason,
        usage=result.usage,
        usage_by_model=dict(result.usage_by_model),
        steps=result.steps,
        untrusted=state is not None and state.untrusted_seen,
    )


async def _run(self: ChildWorkflow, request: str) -> str:
    """The run method every child workflow class shares."""
    return await self.execute_child(request)


def child_workflow(agent: Agent[object, object], activities: Activities) -> type:
    """The child workflow class of ``agent`` (see :func:`~._workflow.agent_workflow`)."""
    return define_workflow(ChildWorkflow, _run, agent, child_workflow_name(agent.name), activities)
