"""An agent's workflow: the unchanged Bastion loop, run as Temporal workflow code.

The workflow history is the run's journal: a replayed workflow re-runs the loop, and every
model call and tool call it reaches is answered from the history instead of running again.
The loop gets the workflow's clock and ids, no store (no I/O in workflow code) and
activity-backed models and tools. A run that suspends for approvals parks the workflow until
the ``decide`` update has decided every pending call; the ``status`` query reads it.

Cancelling the workflow aborts the run as ``AgentStream.abort`` does: the run's body works
in a task of its own that Temporal's cancellation never reaches, and the cancellation
becomes the loop's own abort (a parked run's calls and interrupts are denied first), so
the run ends ``aborted`` with its events published and the workflow completes.
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING

from pydantic_core import to_jsonable_python
from temporalio import workflow

from bastion.core import Usage, id_source
from bastion.tools import (
    ApprovalDecision,
    Directive,
)

from ._below import Below
from ._events import WorkflowEvents
from ._governance import governed
from ._interrupts import DecidingWorkflow
from ._proxies import Activities
from ._shared import cancel_as_abort, define_workflow
from ._views import (
    WorkflowResult,
    WorkflowStatus,
    result_adapter,
    status_adapter,
)
from ._wiring import workflow_config

if TYPE_CHECKING:
    from collections.abc import Generator

    from bastion.agent import Agent, AgentStream, RunResult
    from bastion.tools import ApprovalRequest

__all__ = ["ABORTED", "AgentWorkflow", "agent_workflow"]

ABORTED = "The run was cancelled."
"""The reason given to the calls and interrupts a cancelled run was waiting on."""


class AgentWorkflow(DecidingWorkflow, Below):
    """The workflow of one agent; :func:`agent_workflow` makes one subclass per agent."""

    agent: Agent[object, object]
    activities: Activities

    def __init__(self) -> None:
        DecidingWorkflow.__init__(self)
        Below.__init__(self)
        self._status = WorkflowStatus(status="running")
        self._usage = [Usage()]
        self._pending: dict[str, ApprovalRequest] = {}
        self._decided: dict[str, ApprovalDecision] = {}
        self._stream: AgentStream[object] | None = None
        self._aborted = False

    async def execute(self, prompt: str) -> str:
        """Run the agent to its end; a cancellation of the workflow aborts the run."""
        return await cancel_as_abort(self._body(prompt), self.abort)

    def abort(self) -> None:
        """Abort the run: the stream at work now, or the next one (a parked run's)."""
        self._aborted = True
        if self._stream is not None:
            self._stream.abort()

    async def _body(self, prompt: str) -> str:
        """Run the agent to its end, parking at each approval until it is decided."""
        agent = self.agent
        config = workflow_config(agent.config, self.activities, self._usage)
        config = governed(config, self.activities.counters)
        events = WorkflowEvents(activity=self.activities.publish)
        with id_source(lambda: workflow.uuid4().hex):
            result = await self._drive(events, agent.stream(prompt, config=config))
            while result.status == "awaiting_approval":
                await events.flush()
                directive = await self.decisions(result)
                stream = agent.stream(result.state, directive=directive, config=config)
                result = await self._drive(events, stream)
        await events.flush()
        self._status = WorkflowStatus(status=result.status, usage=result.usage)  # type: ignore[arg-type]
        await workflow.wait_condition(workflow.all_handlers_finished)
        return _encode(workflow.info().workflow_id, result)

    async def _drive(
        self, events: WorkflowEvents, stream: AgentStream[object]
    ) -> RunResult[object]:
        """Drain ``stream``, publishing its events (see :meth:`tracking`)."""
        with self.tracking(stream):
            return await events.drain(stream)

    @contextmanager
    def tracking(self, stream: AgentStream[object]) -> Generator[None]:
        """While ``stream`` works, a cancellation aborts it (at once, if it came before)."""
        self._stream = stream
        if self._aborted:
            stream.abort()
        try:
            yield
        finally:
            self._stream = None

    async def decisions(self, result: RunResult[object]) -> Directive:
        """Park the run at its pending calls and interrupts until each is decided.

        A cancelled workflow denies whatever is still undecided.
        """
        self._park(result)
        await self.report_up()  # a sub-agent's parent shows what waits here
        await workflow.wait_condition(lambda: self._all_decided() or self._aborted)
        self.deny_the_rest(self._pending, self._decided, ABORTED)
        directive = Directive(
            approvals=list(self._decided.values()), interrupts=self.take_resolutions()
        )
        self._pending, self._decided = {}, {}
        self._status = WorkflowStatus(status="running", usage=self._usage[0])
        await self.report_up()
        return directive

    def _park(self, result: RunResult[object]) -> None:
        held = self.park_interrupts(result)  # calls held by an interrupt: decided with it
        pending = result.pending_approvals
        self._pending = {p.tool_call_id: p for p in pending if p.tool_call_id not in held}
        self._status = WorkflowStatus(
            status="awaiting_approval",
            pending=list(self._pending.values()),
            usage=result.usage,
            interrupts=self.interrupt_views(),
        )

    @workflow.update
    async def settle(self) -> str:
        """Wait until the run (or a sub-agent below it) parks for a decision or ends; its status."""
        await workflow.wait_condition(
            lambda: self._status.status != "running" or bool(self.waiting_below())
        )
        return self.status()

    @workflow.query
    def status(self) -> str:
        """Status, pending approvals (with its sub-agents') and usage so far, as JSON."""
        status = self._status
        if status.status == "running":
            status = replace(status, usage=self._usage[0])
        return status_adapter().dump_json(self.with_below(status)).decode()

    @workflow.signal
    async def child_waiting(self, child: str, payload: str) -> None:
        """A sub-agent's workflow reports what waits in it (empty: nothing any more)."""
        await self.heard(child, payload)

    async def report_up(self) -> None:
        """Report to the parent (a sub-agent's) what this run and those below wait for."""
        await self.report(self.agent.name, self._pending.values(), self.interrupt_views())


async def _run(self: AgentWorkflow, prompt: str) -> str:
    """The run method every agent's workflow class shares."""
    return await self.execute(prompt)


def agent_workflow(agent: Agent[object, object], name: str, activities: Activities) -> type:
    """The workflow class that runs ``agent``, registered under ``name``."""
    return define_workflow(AgentWorkflow, _run, agent, name, activities)


def _encode(workflow_id: str, result: RunResult[object]) -> str:
    view: WorkflowResult[object] = WorkflowResult(
        workflow_id=workflow_id,
        run_id=result.run_id,
        status=result.status,  # type: ignore[arg-type]  # never awaiting_approval here
        output=to_jsonable_python(result.output),
        text=result.text,
        usage=result.usage,
        steps=result.steps,
        error=result.error,
    )
    return result_adapter().dump_json(view).decode()
