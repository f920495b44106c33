"""Checking a fan-out's options before anything runs: :func:`plan_fan_out` -> :class:`FanOutPlan`.

Called by ``Agent.fan_out`` / ``fan_out_stream``; ``_fanout.execute`` runs the plan.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bastion.core import UserError, new_id

from ._fanout_types import ChildBudget, FanOutChild
from ._merge import check_merge

if TYPE_CHECKING:
    from bastion.agent import AgentLike
    from bastion.agent._config import RunConfig
    from bastion.core import Clock, EventBus
    from bastion.stores import Stores

    from ._judge import Judge
    from ._merge import Concat, FirstSuccess, MergeFunction

__all__ = ["FanOutPlan", "plan_fan_out"]


@dataclass(frozen=True, kw_only=True, slots=True)
class FanOutPlan:
    """A checked fan-out, ready to run."""

    id: str
    children: tuple[FanOutChild, ...]
    strategy: Concat | FirstSuccess | Judge | MergeFunction
    budget: ChildBudget | None
    max_concurrent: int
    host: RunConfig
    clock: Clock
    bus: EventBus | None
    stores: (
        Callable[[], Awaitable[Stores]] | None
    )  # opens the parent's store (None: nothing journaled)


def plan_fan_out(
    host: RunConfig,
    children: Sequence[FanOutChild | tuple[AgentLike, str]],
    *,
    merge: object,
    per_child_budget: ChildBudget | None,
    max_concurrent_children: int,
    fan_out_id: str | None,
    stores: Callable[[], Awaitable[Stores]] | None,
) -> FanOutPlan:
    """Check a fan-out's options before anything runs.

    Raises:
        UserError: An option is invalid.
    """
    owner = f"Agent {host.name!r}: fan_out()"
    if isinstance(children, str | bytes) or not isinstance(children, Sequence) or not children:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner} needs a non-empty list of children, got {children!r}.")
    checked = tuple(_child(owner, c, i) for i, c in enumerate(children))
    names = [c.label for c in checked]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UserError(
            f"{owner}: child names must be unique, {', '.join(map(repr, duplicates))} repeat; "
            "give FanOutChild(..., name=...)."
        )
    cap = max_concurrent_children
    if isinstance(cap, bool) or not isinstance(cap, int) or cap < 1:  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: max_concurrent_children must be an int >= 1, got {cap!r}.")
    if per_child_budget is not None and not isinstance(per_child_budget, ChildBudget):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"{owner}: per_child_budget must be a ChildBudget(tokens=..., tool_calls=..., "
            f"duration=...), got {per_child_budget!r}."
        )
    if fan_out_id is not None and (not isinstance(fan_out_id, str) or not fan_out_id.strip()):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: fan_out_id must be a non-empty string, got {fan_out_id!r}.")
    return FanOutPlan(
        id=fan_out_id or new_id("fanout"),
        children=checked,
        strategy=check_merge(merge),
        budget=per_child_budget,
        max_concurrent=cap,
        host=host,
        clock=host.clock,
        bus=host.event_bus,
        stores=stores,
    )


def _child(owner: str, child: object, index: int) -> FanOutChild:
    if isinstance(child, tuple) and len(child) == 2:  # pyright: ignore[reportUnknownArgumentType]
        child = FanOutChild(*child)  # pyright: ignore[reportUnknownArgumentType]
    if not isinstance(child, FanOutChild):
        raise UserError(
            f"{owner}: child {index} is {child!r}; give FanOutChild(agent, input) or "
            "an (agent, input) pair."
        )
    agent: object = child.agent
    if not callable(getattr(agent, "stream", None)) or not isinstance(
        getattr(agent, "name", None), str
    ):
        raise UserError(
            f"{owner}: child {index}'s agent {agent!r} is not an agent (an Agent, a Team or "
            "an external_agent(...))."
        )
    if not isinstance(child.input, str):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: child {index}'s input must be a string, got {child.input!r}.")
    return child
