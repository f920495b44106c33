"""Every agent a ``TemporalAgent`` can reach: its handoff targets, its sub-agents, its children.

A worker must register the workflows and activities of each agent a run may come to run:
the agents it hands off to (they continue the run in its workflow), the sub-agents its
``task_<name>`` / ``as_tool`` tools start (each a child workflow), the agents its fan-outs
run (each a child workflow), and, in turn, every agent those reach.
"""

from __future__ import annotations

from collections import deque
from dataclasses import replace
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar, cast

from temporalio.common import RetryPolicy

from bastion.agent import RetryConfig
from bastion.agent._handoffs import UnknownHandoffTarget
from bastion.core import UserError
from bastion.multi._subrun import SubagentCall

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable

    from bastion.agent import Agent, RunConfig

    from ._proxies import Activities

__all__ = [
    "activities_for",
    "agent_prefix",
    "by_name",
    "hosted",
    "reachable",
    "retry_policy",
    "subagent_of",
]

_DepsT = TypeVar("_DepsT")
_OutputT = TypeVar("_OutputT")
_N = TypeVar("_N")


def hosted(agent: Agent[_DepsT, _OutputT]) -> Agent[object, object]:
    """``agent`` as the workflows and activities hold it: its deps and output opaque.

    They never read either as its type: the worker's deps reach the tools as they are, and
    the output crosses as JSON, validated as the agent's ``output_type`` where it is read.
    (``Agent`` is invariant in both, so this is the one place the types are let go.)
    """
    return cast("Agent[object, object]", agent)


def agent_prefix(name: str) -> str:
    """The prefix of an agent's workflow and activity names: ``bastion.agent.<name>``."""
    return f"bastion.agent.{name}"


def retry_policy(retry: RetryConfig) -> RetryPolicy:
    """The activity retry policy of the agent's model retry settings."""
    initial = max(retry.initial_delay, 0.001)
    return RetryPolicy(
        initial_interval=timedelta(seconds=initial),
        backoff_coefficient=2.0,
        maximum_interval=timedelta(seconds=max(retry.max_delay, initial)),
        maximum_attempts=retry.max_retries + 1,
    )


def activities_for(template: Activities, config: RunConfig) -> Activities:
    """The activities of agent ``config`` (names, retries), with ``template``'s timeouts."""
    prefix = agent_prefix(config.name)
    return replace(
        template,
        model=f"{prefix}.model",
        tool=f"{prefix}.tool",
        source=f"{prefix}.source",
        retry=retry_policy(config.retry or RetryConfig()),
    )


def subagent_of(function: object) -> SubagentCall | None:
    """The sub-agent call a tool made by ``as_tool`` / ``subagents`` runs, else ``None``."""
    return function if isinstance(function, SubagentCall) else None


def reachable(
    root: Agent[object, object], children: Iterable[Agent[object, object]]
) -> dict[str, Agent[object, object]]:
    """``root`` and every agent it can reach, by name (``root`` first).

    Raises:
        UserError: Two different agents share a name, a handoff names an agent its
            registry does not hold, or a child is not an ``Agent``.
    """
    from bastion.agent import Agent

    pending: list[Agent[object, object]] = [root]
    for child in children:
        if not isinstance(child, Agent):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"TemporalAgent({root.name!r}): children must be Agents, got {child!r}."
            )
        pending.append(child)

    def clash(agent: Agent[object, object]) -> UserError:
        return UserError(
            f"TemporalAgent({root.name!r}) reaches two different agents named "
            f"{agent.name!r}: a workflow is registered per name; give them distinct names."
        )

    return by_name(pending, lambda agent: agent.name, _next, clash)


def by_name(
    start: Iterable[_N],
    name: Callable[[_N], str],
    following: Callable[[_N], Iterable[_N]],
    clash: Callable[[_N], Exception],
) -> dict[str, _N]:
    """``start`` and all that ``following`` reaches from it, by name, breadth first.

    A workflow is registered per name: ``clash(node)`` is raised for a node whose name
    names another node already found. ``following`` is called once per node, after it is
    found.
    """
    found: dict[str, _N] = {}
    pending = deque(start)
    while pending:
        node = pending.popleft()
        known = found.get(name(node))
        if known is node:
            continue
        if known is not None:
            raise clash(node)
        found[name(node)] = node
        pending.extend(following(node))
    return found


def _next(agent: Agent[object, object]) -> list[Agent[object, object]]:
    """The agents ``agent`` hands off to and runs as sub-agents."""
    from bastion.agent import Agent

    config = agent.config
    out: list[Agent[object, object]] = []
    handoffs = config.handoffs
    for spec in handoffs.specs if handoffs is not None else ():
        try:
            target = handoffs.target(spec)  # pyright: ignore[reportOptionalMemberAccess]
        except UnknownHandoffTarget as error:
            raise UserError(
                f"Agent {agent.name!r} hands off to {spec.target_name!r}, which its registry "
                "does not hold yet: a worker registers the workflow of every agent a run may "
                "reach, so add it to the AgentRegistry before building the TemporalAgent."
            ) from error
        if isinstance(target, Agent):
            out.append(target)  # pyright: ignore[reportUnknownArgumentType]
    for tool in config.catalog.registry.values():
        call = subagent_of(tool.function)
        if call is not None and isinstance(call.agent, Agent):  # pyright: ignore[reportUnknownMemberType]
            out.append(call.agent)  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    return out
