"""A sub-agent's budget slice (``as_tool(budget=BudgetSlice(...))``).

The parent grants its child at most so many tokens, tool calls, seconds and dollars. The
child's run checks the slice before each model call (a spent slice stops it cleanly:
status ``stopped``, ``stop_reason`` ``budget: ...``, and the parent's model reads what it
had so far) and before each tool batch (calls beyond the tool-call slice are refused with
``rate_limited``, and the model reads why). The child's usage joins the parent's, by model,
like any sub-agent's, so what the slice allowed is counted in the parent.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bastion.core import UserError

if TYPE_CHECKING:
    from ._state import RunState

__all__ = ["BudgetSlice"]


@dataclass(frozen=True, kw_only=True, slots=True)
class BudgetSlice:
    """What a sub-agent may spend of its parent's budget (``None``: no limit of that kind).

    Attributes:
        tokens: Total tokens (prompt and completion) of its model calls.
        tool_calls: Tool calls it may make.
        duration: Seconds it may run (by the agent's clock, from its start in a process).
        cost_usd: Dollars its priced model calls may cost.
    """

    tokens: int | None = None
    tool_calls: int | None = None
    duration: float | None = None
    cost_usd: float | None = None

    def __post_init__(self) -> None:
        for name in ("tokens", "tool_calls", "duration", "cost_usd"):
            value = getattr(self, name)
            if value is None:
                continue
            if (
                isinstance(value, bool)
                or not isinstance(value, int | float)
                or not math.isfinite(value)
                or value < 0
            ):
                raise UserError(f"BudgetSlice.{name} must be a number >= 0, got {value!r}.")

    def spent(self, state: RunState, now: float) -> str | None:
        """What of the slice is used up before the next model call, else ``None``."""
        usage = state.usage
        if self.tokens is not None and usage.total_tokens >= self.tokens:
            return f"tokens ({usage.total_tokens} of {self.tokens})"
        if self.cost_usd is not None and (usage.cost_usd or 0.0) >= self.cost_usd:
            return f"cost (${usage.cost_usd or 0.0:g} of ${self.cost_usd:g})"
        if self.tool_calls is not None and len(state.tool_calls) >= self.tool_calls:
            return f"tool calls ({len(state.tool_calls)} of {self.tool_calls})"
        if self.duration is not None and now - state.started_at >= self.duration:
            return f"duration ({self.duration:g} s)"
        return None

    def calls_left(self, state: RunState) -> int | None:
        """How many more tool calls the slice allows (``None``: no tool-call limit)."""
        if self.tool_calls is None:
            return None
        return max(0, self.tool_calls - len(state.tool_calls))
