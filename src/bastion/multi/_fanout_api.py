"""``fan_out(agent, children)`` and ``fan_out_stream(agent, children)``: a fan-out led by ``agent``.

The children run under the lead agent's governor and, when a child has none, its store.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

from ._fanout import execute
from ._fanout_plan import FanOutPlan, plan_fan_out
from ._fanout_stream import FanOutStream

if TYPE_CHECKING:
    from bastion.agent import AgentLike
    from bastion.agent._config import RunConfig
    from bastion.stores import Stores

    from ._fanout_types import ChildBudget, FanOutChild, FanOutResult
    from ._merge import Merge

__all__ = ["fan_out", "fan_out_stream"]


class _Lead(Protocol):
    """What a fan-out needs of its lead agent (any ``bastion.agent.Agent``)."""

    @property
    def config(self) -> RunConfig:
        """The agent's configuration: its governor, store, clock and event bus."""
        ...

    async def stores(self) -> Stores:
        """The agent's store, opened."""
        ...


async def fan_out(
    agent: _Lead,
    children: Sequence[FanOutChild | tuple[AgentLike, str]],
    *,
    merge: Merge = "concat",
    per_child_budget: ChildBudget | None = None,
    max_concurrent_children: int = 4,
    fan_out_id: str | None = None,
) -> FanOutResult:
    """Run ``children`` concurrently and merge their outputs; see :func:`fan_out_stream`.

    A failing child does not raise: its outcome is in ``result.children``. Usage of
    every child (and of a judge) adds up in ``result.usage``.

    Raises:
        UserError: An option is invalid (nothing has been run).
    """
    plan = _plan(agent, children, merge, per_child_budget, max_concurrent_children, fan_out_id)
    return await execute(plan, None)


def fan_out_stream(
    agent: _Lead,
    children: Sequence[FanOutChild | tuple[AgentLike, str]],
    *,
    merge: Merge = "concat",
    per_child_budget: ChildBudget | None = None,
    max_concurrent_children: int = 4,
    fan_out_id: str | None = None,
) -> FanOutStream:
    """Start a fan-out and stream its events (``agent.fanout.*``); then ``.result``.

    Each child (a :class:`FanOutChild` or an ``(agent, input)`` pair: an Agent, a Team
    or an external agent) runs as its own run, under ``agent``'s governor (as action
    ``agent:<child>``) and, when the child has none, ``agent``'s store. At most
    ``max_concurrent_children`` run at once, taken in registration order. The stream
    also yields each child's own events, wrapped in ``SubagentEvent`` (its
    ``child_run_id`` is the child's run).

    Args:
        agent: The lead agent, whose governor and store the children share.
        children: The children, each with its input.
        merge: ``"concat"`` (default), ``"first_success"``, :class:`Concat`,
            :class:`FirstSuccess`, :class:`Judge` (a judge agent behind the merge
            guard), or a function of the children's :class:`ChildResult` list.
        per_child_budget: Tokens, tool calls and seconds each child may spend.
        max_concurrent_children: How many children run at once.
        fan_out_id: The fan-out's id. With a store, running a fan-out again with the
            same id takes the outcomes of the children that finished before (in
            another process, too) instead of running them again, and continues an
            ``Agent`` child that was in flight from its own run's journal.

    Raises:
        UserError: An option is invalid (nothing has been run).
    """
    return FanOutStream(
        _plan(agent, children, merge, per_child_budget, max_concurrent_children, fan_out_id)
    )


def _plan(  # noqa: PLR0917 - the options of fan_out, in order
    agent: _Lead,
    children: Sequence[FanOutChild | tuple[AgentLike, str]],
    merge: Merge,
    budget: ChildBudget | None,
    cap: int,
    fan_out_id: str | None,
) -> FanOutPlan:
    return plan_fan_out(
        agent.config,
        children,
        merge=merge,
        per_child_budget=budget,
        max_concurrent_children=cap,
        fan_out_id=fan_out_id,
        stores=agent.stores if agent.config.store is not None else None,
    )
