"""The client side of a fan-out on Temporal: checking its options, naming its merge."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

from bastion.core import UserError
from bastion.multi import Concat, FirstSuccess
from bastion.multi._fanout_plan import plan_fan_out
from bastion.multi._judge import Judge
from bastion.multi._merge import check_merge

from ._fan_out import FanOutRequest, FanOutSpec, Strategy

if TYPE_CHECKING:
    from bastion.agent import Agent, AgentLike
    from bastion.multi import ChildBudget, FanOutChild

__all__ = ["check_merges", "fan_out_request"]

_BUILT_IN = ("concat", "first_success")


def check_merges(owner: str, merges: Mapping[str, object] | None) -> dict[str, Strategy]:
    """The merges a ``TemporalAgent``'s fan-outs may name, checked.

    Raises:
        UserError: Not a mapping of names to strategies, a built-in name, or a judge that
            is an agent (its model calls would run in workflow code).
    """
    if merges is None:
        return {}
    if not isinstance(merges, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"{owner}: merges must be a dict of name to merge strategy.")
    checked: dict[str, Strategy] = {}
    for name, merge in merges.items():
        if not isinstance(name, str) or not name.strip() or name in _BUILT_IN:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"{owner}: merge name {name!r} must be a non-empty string other than "
                f"{' and '.join(map(repr, _BUILT_IN))}."
            )
        strategy = check_merge(merge)
        if isinstance(strategy, Judge) and callable(getattr(strategy.judge, "stream", None)):
            raise UserError(
                f"{owner}: merge {name!r} is a Judge whose judge is an agent; on Temporal a "
                "judge must be a function (an agent judge's model calls are not activities yet)."
            )
        checked[name] = strategy
    return checked


def fan_out_request(
    host: Agent[object, object],
    reach: Mapping[str, Agent[object, object]],
    merges: Mapping[str, Strategy],
    children: Sequence[FanOutChild | tuple[AgentLike, str]],
    *,
    merge: object,
    per_child_budget: ChildBudget | None,
    max_concurrent_children: int,
    fan_out_id: str | None,
) -> tuple[str, FanOutRequest]:
    """The fan-out's id and the fan-out workflow's input, checked as ``agent.fan_out`` does.

    Raises:
        UserError: An option is invalid, a child's agent is not one the worker registers,
            or ``merge`` is neither built in nor registered by name.
    """
    owner = f"TemporalAgent({host.name!r}).fan_out()"
    named = isinstance(merge, str) and merge in merges
    plan = plan_fan_out(
        host.config,
        children,
        merge="concat" if named else merge,
        per_child_budget=per_child_budget,
        max_concurrent_children=max_concurrent_children,
        fan_out_id=fan_out_id,
        stores=None,
    )
    specs: list[FanOutSpec] = []
    for child in plan.children:
        agent = child.agent
        if reach.get(agent.name) is not agent:
            raise UserError(
                f"{owner}: child {child.label!r} runs agent {agent.name!r}, which this "
                "TemporalAgent does not register: pass it in TemporalAgent(..., children=[...]) "
                "so every worker has its workflow."
            )
        specs.append(FanOutSpec(agent=agent.name, input=child.input, label=child.label))
    name, separator = (str(merge), "\n\n") if named else _merge_name(owner, plan.strategy, merges)
    return plan.id, FanOutRequest(
        children=specs,
        merge=name,
        separator=separator,
        budget=per_child_budget,
        max_concurrent=plan.max_concurrent,
    )


def _merge_name(owner: str, strategy: Strategy, merges: Mapping[str, Strategy]) -> tuple[str, str]:
    if isinstance(strategy, Concat):
        return "concat", strategy.separator
    if isinstance(strategy, FirstSuccess):
        return "first_success", "\n\n"
    for name, registered in merges.items():
        if registered is strategy:
            return name, "\n\n"
    raise UserError(
        f"{owner}: merge {strategy!r} is not registered: the workers run the merge, so give "
        "it a name with TemporalAgent(..., merges={'name': ...}) and pass merge='name'."
    )
