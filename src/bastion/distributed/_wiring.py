"""An agent's configuration as its workflow runs it: ``workflow_config``.

Temporal time, activity models, no store, and its tools and handoffs:

- A plain tool's function becomes the tool activity (``_proxies.proxy_tool``).
- A sub-agent tool (``as_tool``, ``subagents``) starts the sub-agent's child workflow
  (``_children.py``) and returns what the parent's model reads, as ``SubagentCall`` does
  locally: the child's answer, its usage added to the run's, a failure as a tool error.
- A handoff continues **the same workflow** with the target's configuration, as a local
  handoff continues the same run: the target's models and tools are its own activities
  (``bastion.agent.<target>.model`` / ``.tool``), so the run keeps one history, one run id
  and one status, and the number of handoffs is bounded by ``max_handoffs``.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING, Any

from temporalio import workflow
from temporalio.exceptions import ChildWorkflowError

from bastion.agent import RetryConfig
from bastion.agent._catalog import ToolCatalog
from bastion.agent._handoffs import HandoffCall, Handoffs, handoff_of
from bastion.agent._sources import ToolSources
from bastion.core import messages_adapter
from bastion.multi._child import child_run_id
from bastion.multi._subrun import ANCESTRY, PARENT_AGENT, PARENT_RUN_ID, PARENT_TOOL_CALL_ID
from bastion.tools import ToolError, ToolRegistry

from ._child_wire import (
    ChildOutcome,
    ChildRequest,
    child_workflow_name,
    outcome_adapter,
    request_json,
)
from ._code_mode import advertised
from ._compaction import activity_models, workflow_keeper
from ._proxies import Activities, ActivityModel, WorkflowClock, proxy_tool
from ._reach import activities_for, subagent_of
from ._sources import ActivitySource

if TYPE_CHECKING:
    from bastion.agent import RunConfig
    from bastion.core import RunContext, Usage
    from bastion.multi._subrun import SubagentCall
    from bastion.tools import Tool, ToolResult


__all__ = ["workflow_parts"]


def workflow_parts(
    config: RunConfig, activities: Activities, usage: list[Usage]
) -> tuple[list[Tool], Handoffs | None]:
    """``config``'s tools and handoffs as its workflow runs them (see the module)."""
    handoffs = config.handoffs
    specs: dict[str, Any] = {}
    if handoffs is not None:
        targets = [
            _WorkflowTarget(handoffs.target(spec).config, activities, usage)
            for spec in handoffs.specs
        ]
        specs = {
            spec.tool_name: replace(spec, target=target)
            for spec, target in zip(handoffs.specs, targets, strict=True)
        }
        handoffs = replace(handoffs, specs=tuple(specs.values()))
    tools: list[Tool] = []
    for tool in config.catalog.registry.values():
        call = subagent_of(tool.function)
        if handoff_of(tool) is not None:  # on_handoff runs in the workflow, as hooks do
            tools.append(replace(tool, function=HandoffCall(specs[tool.name])))
        elif call is not None:
            tools.append(replace(tool, function=_SubagentChild(call)))
        else:
            tools.append(proxy_tool(tool, activities))
    return tools, handoffs


def workflow_config(config: RunConfig, activities: Activities, usage: list[Usage]) -> RunConfig:
    """``config`` as the workflow runs it: Temporal time, activity models and tools, no store.

    The loop's own model retries are off: the model activity's retry policy does them.
    """
    clock = WorkflowClock()
    served = activity_models(config)
    models = tuple(ActivityModel(m, i, activities, usage) for i, m in enumerate(served))
    tools, handoffs = workflow_parts(config, activities, usage)
    registry = ToolRegistry(tools, owner=f"Agent {config.name!r}")
    catalog = ToolCatalog(registry, advertise=advertised(config, activities))
    sources = tuple(ActivitySource(s.name, activities) for s in config.tool_sources.sources)
    return replace(
        config,
        model=models[0],
        models=models[: len(config.models)],
        context=workflow_keeper(config, models),
        clock=clock,
        catalog=catalog,
        tools=catalog.current(),
        tool_sources=ToolSources(sources, registry),
        # a result cache of this run only: one shared by a worker's runs would answer a
        # replay differently from the first execution (a hit on one worker, a miss on another)
        executor=config.executor.on_clock(clock),
        retry=RetryConfig(max_retries=0),
        store=None,
        handoffs=handoffs,
        deps=None,  # the worker's: made where the tools run, never in workflow code
    )


class _WorkflowTarget:
    """A handoff target whose configuration is the workflow's (built when first used)."""

    __slots__ = ("_activities", "_built", "_config", "_usage", "name")

    def __init__(self, config: RunConfig, activities: Activities, usage: list[Usage]) -> None:
        self.name = config.name
        self._config = config
        self._activities = activities
        self._usage = usage
        self._built: RunConfig | None = None

    @property
    def config(self) -> RunConfig:
        """The target's configuration with its own activity models and tools."""
        if self._built is None:
            own = activities_for(self._activities, self._config)
            self._built = workflow_config(self._config, own, self._usage)
        return self._built


class _SubagentChild:
    """A sub-agent tool's function in the workflow: the sub-agent's child workflow."""

    __slots__ = ("call",)

    def __init__(self, call: SubagentCall) -> None:
        self.call = call

    async def __call__(self, ctx: RunContext[object], input: str) -> ToolResult:
        """Start (or, replayed, find) the child workflow of this call and wait for it.

        Raises:
            ToolError: The child failed, was aborted, or its workflow did not finish.
        """
        call = self.call
        name = call.agent.config.name
        assert ctx.tool_call_id is not None  # a sub-agent runs inside a tool call
        history = None
        if call.input_filter is not None:  # runs in the workflow, on the run's messages
            history = messages_adapter().dump_json(await call.history(ctx)).decode()
        request = ChildRequest(
            input=input,
            kind="subagent",
            label=name,
            capability="read_only" if call.capability == "read_only" else "full",
            history=history,
            metadata={
                PARENT_RUN_ID: ctx.run_id,
                PARENT_AGENT: ctx.agent_name,
                PARENT_TOOL_CALL_ID: ctx.tool_call_id,
                ANCESTRY: [ctx.agent_name],
            },
        )
        try:
            text = await workflow.execute_child_workflow(
                child_workflow_name(name),
                request_json(request),
                id=child_run_id(ctx.run_id, ctx.step, ctx.tool_call_id),
                result_type=str,
            )
        except ChildWorkflowError as error:
            raise ToolError(
                f"Sub-agent {name!r} did not finish: {error.cause or error}."
            ) from error
        return _shaped(call, outcome_adapter().validate_json(text))


def _shaped(call: SubagentCall, outcome: ChildOutcome) -> ToolResult:
    """What the parent's model reads of the child: what it reads locally."""
    return call.shaped(outcome.as_result(), list(outcome.texts), untrusted=outcome.untrusted)
