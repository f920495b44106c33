"""Multi-agent on ``TemporalAgent``: what a worker registers, what is refused, fan-out."""

from __future__ import annotations

from typing import TYPE_CHECKING

from temporalio.activity import _Definition as activity_defn  # pyright: ignore[reportPrivateUsage]
from temporalio.common import WorkflowIDConflictPolicy, WorkflowIDReusePolicy
from temporalio.exceptions import WorkflowAlreadyStartedError
from temporalio.workflow import _Definition as workflow_defn  # pyright: ignore[reportPrivateUsage]

from ._agent_activities import agent_activities
from ._children import child_workflow
from ._fan_out import (
    fan_out_adapter,
    fan_out_request_adapter,
    fan_out_workflow,
    fan_out_workflow_name,
)
from ._fan_out_client import fan_out_request
from ._reach import activities_for, subagent_of

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from temporalio.client import Client, WorkflowHandle

    from bastion.agent import Agent, AgentLike, RunConfig
    from bastion.multi import ChildBudget, FanOutChild, FanOutResult
    from bastion.multi._merge import Merge

    from ._activities import ActivityFunction
    from ._fan_out import Strategy
    from ._proxies import Activities

__all__ = [
    "FanOutMethods",
    "activity_name",
    "multi_agent_refusals",
    "registrations",
    "worker_parts",
    "workflow_name",
]


def multi_agent_refusals(config: RunConfig) -> list[str]:
    """What of ``config``'s handoffs and sub-agents the workflow cannot run yet."""
    from bastion.agent import Agent

    refused: list[str] = []
    for tool in config.catalog.registry.values():
        call = subagent_of(tool.function)
        if call is None:
            continue
        for reason, present in (
            ("that is not an Agent", not isinstance(call.agent, Agent)),
            ("granting secrets", call.secrets is not None),
            ("with a budget slice", call.budget is not None),
            ("with causality tracking", call.causality != "off"),
        ):
            if present:
                refused.append(f"sub-agent tool {tool.name!r} {reason}")
    handoffs = config.handoffs
    if handoffs is not None:
        refused.extend(
            f"handoff to {spec.target_name!r}, which is not an Agent"
            for spec in handoffs.specs
            if not isinstance(handoffs.target(spec), Agent)
        )
    return refused


def registrations(
    reach: Mapping[str, Agent[object, object]],
    main: Sequence[type],
    activities: Activities,
    merges: Mapping[str, Strategy],
    beat: float | None,
) -> tuple[tuple[type, ...], tuple[ActivityFunction, ...]]:
    """The workflows and activities a worker of the first agent of ``reach`` registers.

    Its own workflows (``main``) and fan-out workflow, and for each agent it reaches a
    child workflow and its model and tool activities.
    """
    root = next(iter(reach.values()))
    workflows: list[type] = [*main, fan_out_workflow(root, activities, merges)]
    functions: list[ActivityFunction] = []
    for agent in reach.values():
        config = agent.config
        own = activities_for(activities, config)
        workflows.append(child_workflow(agent, own))
        functions.extend(agent_activities(own, config, beat))
    return tuple(workflows), tuple(functions)


def worker_parts(
    parts: Sequence[tuple[Sequence[type], Sequence[ActivityFunction]]],
) -> tuple[list[type], list[ActivityFunction]]:
    """The workflows and activities of several agents for one worker, each name once.

    Agents that reach the same agent (``triage`` and ``billing`` handing off to each
    other) both register its child workflow and activities: the same definitions.
    """
    workflows: dict[str, type] = {}
    functions: dict[str, ActivityFunction] = {}
    for classes, activities in parts:
        for cls in classes:
            workflows.setdefault(workflow_name(cls), cls)
        for function in activities:
            functions.setdefault(activity_name(function), function)
    return list(workflows.values()), list(functions.values())


def workflow_name(cls: type) -> str:
    """The name a workflow class is registered under (``""``: a dynamic workflow)."""
    return workflow_defn.must_from_class(cls).name or ""


def activity_name(function: ActivityFunction) -> str:
    """The name an activity function is registered under (``""``: a dynamic activity)."""
    name = activity_defn.must_from_callable(function).name  # pyright: ignore[reportUnknownMemberType]
    return name or ""


class FanOutMethods:
    """``TemporalAgent``'s fan-out: ``agent.fan_out`` as a workflow of child workflows."""

    _host: Agent[object, object]
    """The agent, as its workflows hold it."""
    reach: dict[str, Agent[object, object]]
    merges: dict[str, Strategy]
    task_queue: str

    async def start_fan_out(
        self,
        client: Client,
        children: Sequence[FanOutChild | tuple[AgentLike, str]],
        *,
        merge: Merge | str = "concat",
        per_child_budget: ChildBudget | None = None,
        max_concurrent_children: int = 4,
        fan_out_id: str | None = None,
    ) -> WorkflowHandle[object, str]:
        """Start a fan-out workflow (see :meth:`fan_out`) and return its handle.

        Starting a fan-out id that already ran (or runs) returns that workflow's handle:
        nothing runs again.

        Raises:
            UserError: An option is invalid (nothing has been started).
        """
        workflow_id, request = fan_out_request(
            self._host,
            self.reach,
            self.merges,
            children,
            merge=merge,
            per_child_budget=per_child_budget,
            max_concurrent_children=max_concurrent_children,
            fan_out_id=fan_out_id,
        )
        try:
            return await client.start_workflow(
                fan_out_workflow_name(self._host.name),
                fan_out_request_adapter().dump_json(request).decode(),
                id=workflow_id,
                task_queue=self.task_queue,
                result_type=str,
                id_reuse_policy=WorkflowIDReusePolicy.REJECT_DUPLICATE,
                id_conflict_policy=WorkflowIDConflictPolicy.USE_EXISTING,
            )
        except WorkflowAlreadyStartedError:
            return client.get_workflow_handle(workflow_id, result_type=str)

    async def fan_out(
        self,
        client: Client,
        children: Sequence[FanOutChild | tuple[AgentLike, str]],
        *,
        merge: Merge | str = "concat",
        per_child_budget: ChildBudget | None = None,
        max_concurrent_children: int = 4,
        fan_out_id: str | None = None,
    ) -> FanOutResult:
        """Run ``children`` as child workflows and merge their outputs, as ``agent.fan_out``.

        Each child's agent must be registered (this agent's ``children``, handoff targets
        or sub-agents); ``merge`` is ``"concat"``, ``"first_success"``, ``Concat``,
        ``FirstSuccess``, or the name of a merge given in ``TemporalAgent(merges=...)``.
        Outputs come back as plain JSON.

        Raises:
            UserError: An option is invalid (nothing has been started).
        """
        handle = await self.start_fan_out(
            client,
            children,
            merge=merge,
            per_child_budget=per_child_budget,
            max_concurrent_children=max_concurrent_children,
            fan_out_id=fan_out_id,
        )
        return fan_out_adapter().validate_json(await handle.result())

    async def fan_out_result(self, client: Client, fan_out_id: str) -> FanOutResult:
        """Wait for the end of the fan-out ``fan_out_id``; its result."""
        handle = client.get_workflow_handle(fan_out_id, result_type=str)
        return fan_out_adapter().validate_json(await handle.result())
