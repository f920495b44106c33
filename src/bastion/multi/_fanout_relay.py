"""A fan-out child's identity and voice: its derived run id, and its events relayed.

:func:`fan_out_child_run_id` derives a child's run id from the fan-out id, the child's index
and its name, through the same derivation as a tool call's durable child
(:func:`~bastion.multi._child.child_run_id`): running the fan-out again finds the child's
run. :func:`judge_run_id` does the same for a judge agent's answers. :class:`ChildRelay`
wraps each of the child's events in a ``SubagentEvent`` for the fan-out stream's caller.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from bastion.core import SubagentEvent

from ._child import child_run_id

if TYPE_CHECKING:
    from bastion.core import AgentEvent

    from ._fanout_plan import FanOutPlan
    from ._fanout_types import FanOutChild, FanOutEvent

__all__ = ["ChildRelay", "fan_out_child_run_id", "judge_run_id"]


def fan_out_child_run_id(fan_out_id: str, index: int, name: str) -> str:
    """The run id of child ``name`` (at ``index``) of fan-out ``fan_out_id``."""
    return child_run_id(fan_out_id, index, name)


def judge_run_id(fan_out_id: str, question: int) -> str:
    """The run id of the judge's ``question``-th answer (1, or 2: the position check).

    Negative indexes: no child (indexed from 0) shares it.
    """
    return child_run_id(fan_out_id, -question, "judge")


class ChildRelay:
    """Forwards a child's events to the stream's caller, each in a ``SubagentEvent``."""

    __slots__ = ("ancestry", "child", "fan_out_id", "forward", "run_id")

    def __init__(
        self,
        forward: Callable[[FanOutEvent], None],
        plan: FanOutPlan,
        child: FanOutChild,
        run_id: str,
    ) -> None:
        self.forward = forward
        self.fan_out_id = plan.id
        self.child = child
        self.run_id = run_id
        self.ancestry = (plan.host.name, child.agent.name)

    def __call__(self, event: AgentEvent) -> None:
        self.forward(
            SubagentEvent(
                run_id=self.fan_out_id,
                tool_call_id=self.child.label,
                agent_name=self.child.agent.name,
                child_run_id=self.run_id,
                ancestry=self.ancestry,
                event=event,
            )
        )
