"""Fan-out on Temporal: a fan-out workflow whose children are child workflows.

``TemporalAgent.fan_out`` starts the workflow ``bastion.agent.<host>.fan_out``. It runs
the very code of a local ``agent.fan_out`` (``bastion.multi._fanout.execute``: registration
order, ``max_concurrent_children``, isolation of a failing child, the merge strategies,
``first_success`` cancelling the siblings still running), with each child a
:class:`_ChildWorkflowStream`: the child agent's child workflow (``_children.py``), whose
id is ``<fan-out id>/<child name>``. Each child's :class:`~bastion.agent.ChildBudget` is
enforced inside its own workflow. Cancelling a child (``first_success``) cancels its
workflow: its activities in flight are cancelled, and it ends ``aborted``.

A worker lost mid-fan-out costs nothing run twice: the replayed fan-out workflow finds
the child workflows it started in its history, and each child workflow replays its own.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from pydantic import TypeAdapter
from pydantic_core import to_jsonable_python
from temporalio import workflow
from temporalio.exceptions import CancelledError, ChildWorkflowError

from bastion.agent import AgentRunHandle
from bastion.agent._result import RunResult
from bastion.core import RunErrorInfo, Usage, id_source
from bastion.multi import ChildBudget, Concat, FanOutChild, FanOutResult, FirstSuccess
from bastion.multi._fanout import FAN_OUT_CHILD, FAN_OUT_ID, execute
from bastion.multi._fanout_plan import FanOutPlan

from ._child_wire import ChildRequest, child_workflow_name, outcome_adapter, request_json
from ._proxies import WorkflowClock
from ._shared import define_workflow
from ._wiring import workflow_config

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bastion.agent import Agent
    from bastion.core import AgentEvent
    from bastion.multi import ChildResult
    from bastion.multi._judge import Judge
    from bastion.multi._merge import MergeFunction

    from ._proxies import Activities

__all__ = [
    "FanOutRequest",
    "fan_out_adapter",
    "fan_out_request_adapter",
    "fan_out_workflow",
    "fan_out_workflow_name",
]

Strategy: TypeAlias = "Concat | FirstSuccess | Judge | MergeFunction"


def fan_out_workflow_name(host: str) -> str:
    """The workflow type of agent ``host``'s fan-outs."""
    return f"bastion.agent.{host}.fan_out"


@dataclass(frozen=True, kw_only=True, slots=True)
class FanOutSpec:
    """One child as the fan-out workflow gets it: the agent's name, the input, the label."""

    agent: str
    input: str
    label: str


@dataclass(frozen=True, kw_only=True, slots=True)
class FanOutRequest:
    """A fan-out's options, as the fan-out workflow's input.

    ``merge``: ``concat``, ``first_success``, or the name of a merge registered with
    ``TemporalAgent(merges=...)``; ``separator`` goes with ``concat``.
    """

    children: list[FanOutSpec]
    merge: str
    separator: str = "\n\n"
    budget: ChildBudget | None = None
    max_concurrent: int = 4


@cache
def fan_out_request_adapter() -> TypeAdapter[FanOutRequest]:
    """The adapter of the fan-out workflow's input."""
    return TypeAdapter(FanOutRequest)


@cache
def fan_out_adapter() -> TypeAdapter[FanOutResult]:
    """The adapter of the fan-out workflow's result (outputs as plain JSON)."""
    from bastion.multi._merge_guard import GuardReport  # noqa: F401  # pyright: ignore[reportUnusedImport] - resolves its annotation

    return TypeAdapter(FanOutResult)


class FanOutWorkflow:
    """The fan-out workflow of one host agent; :func:`fan_out_workflow` makes one per agent."""

    agent: Agent[object, object]
    activities: Activities
    merges: Mapping[str, Strategy]

    async def execute(self, text: str) -> str:
        """Run the fan-out and merge; the :class:`~bastion.agent.FanOutResult` as JSON."""
        request = fan_out_request_adapter().validate_json(text)
        host = workflow_config(self.agent.config, self.activities, [Usage()])
        fan_out_id = workflow.info().workflow_id
        children = tuple(
            FanOutChild(_ChildWorkflowAgent(c.agent, request.budget), c.input, name=c.label)
            for c in request.children
        )
        plan = FanOutPlan(
            id=fan_out_id,
            children=children,
            strategy=self._strategy(request),
            budget=None,  # each child workflow enforces its own
            max_concurrent=request.max_concurrent,
            host=host,
            clock=WorkflowClock(),
            bus=None,
            stores=None,  # the history is the journal
        )
        with id_source(lambda: workflow.uuid4().hex):
            result = await execute(plan, None)
        plain = FanOutResult(
            fan_out_id=result.fan_out_id,
            output=to_jsonable_python(result.output),
            children=tuple(_plain(c) for c in result.children),
            strategy=result.strategy,
            usage=result.usage,
            chosen=result.chosen,
            error=result.error,
            guard=result.guard,
        )
        return fan_out_adapter().dump_json(plain).decode()

    def _strategy(self, request: FanOutRequest) -> Strategy:
        if request.merge == "concat":
            return Concat(separator=request.separator)
        if request.merge == "first_success":
            return FirstSuccess()
        return self.merges[request.merge]


def _plain(child: ChildResult) -> ChildResult:
    from dataclasses import replace

    return replace(child, output=to_jsonable_python(child.output))


class _ChildWorkflowAgent:
    """A fan-out child as the fan-out code sees it: an agent whose runs are child workflows."""

    __slots__ = ("budget", "name")

    def __init__(self, name: str, budget: ChildBudget | None) -> None:
        self.name = name
        self.budget = budget

    def stream(self, input: str, *, metadata: dict[str, Any] | None = None) -> _ChildWorkflowStream:
        """The child's run: its workflow, started when the stream is drained."""
        metadata = dict(metadata or {})
        label = str(metadata.get(FAN_OUT_CHILD, self.name))
        request = ChildRequest(
            input=input, kind="fan_out", label=label, budget=self.budget, metadata=metadata
        )
        return _ChildWorkflowStream(self.name, f"{metadata.get(FAN_OUT_ID)}/{label}", request)


class _ChildWorkflowStream(AgentRunHandle[RunResult[object]]):
    """A child workflow as a child's run: no events, then its result; abort cancels it."""

    __slots__ = ("_aborted", "_handle", "_request", "_run_id", "agent")

    def __init__(self, agent: str, run_id: str, request: ChildRequest) -> None:
        super().__init__()
        self.agent = agent
        self._run_id = run_id
        self._request = request
        self._aborted = False
        self._handle: workflow.ChildWorkflowHandle[object, str] | None = None

    @property
    def run_id(self) -> str:
        """The child workflow's id."""
        return self._run_id

    async def __anext__(self) -> AgentEvent:
        if self._result is None:
            await self.drain()
        raise StopAsyncIteration  # a child workflow's events stay in its own history

    async def aclose(self) -> None:
        """Cancel the child workflow if it has not ended."""
        if self._result is None:
            self.abort()

    def abort(self, *, drain: bool = False) -> None:
        """Cancel the child workflow (``drain`` too: its step is its workflow's)."""
        del drain
        self._aborted = True
        if self._handle is not None:
            self._handle.cancel()

    async def drain(self) -> RunResult[object]:
        """Start the child workflow (unless aborted first) and wait for its end."""
        if not self._aborted:
            self._result = await self._wait()
        if self._result is None:
            self._result = self._ended("aborted", None)
        return self._result

    async def _wait(self) -> RunResult[object] | None:
        handle = self._handle = await workflow.start_child_workflow(
            child_workflow_name(self.agent),
            request_json(self._request),
            id=self.run_id,
            result_type=str,
        )
        if self._aborted:  # cancelled while it was starting
            handle.cancel()
        try:
            text = await handle
        except ChildWorkflowError as error:
            if isinstance(error.cause, CancelledError):
                return None
            why = RunErrorInfo(code="child_error", message=f"{error.cause or error}")
            return self._ended("failed", why)
        except asyncio.CancelledError:
            if not self._aborted:
                raise  # the fan-out itself is cancelled
            return None
        outcome = outcome_adapter().validate_json(text)
        if self._aborted and outcome.status != "completed":
            return None  # it ended as it was cancelled: an aborted child, as locally
        return outcome.as_result()

    def _ended(
        self, status: Literal["aborted", "failed"], error: RunErrorInfo | None
    ) -> RunResult[object]:
        return RunResult(
            run_id=self.run_id,
            agent_name=self.agent,
            status=status,
            output=None,
            text="",
            messages=[],
            usage=Usage(),
            usage_by_model={},
            tool_calls=[],
            steps=0,
            duration=0.0,
            error=error,
        )


async def _run(self: FanOutWorkflow, request: str) -> str:
    """The run method every fan-out workflow class shares."""
    return await self.execute(request)


def fan_out_workflow(
    agent: Agent[object, object], activities: Activities, merges: Mapping[str, Strategy]
) -> type:
    """The fan-out workflow class of host ``agent`` (see :func:`~._workflow.agent_workflow`)."""
    cls = define_workflow(
        FanOutWorkflow, _run, agent, fan_out_workflow_name(agent.name), activities
    )
    cls.merges = dict(merges)
    return cls
