"""The data of a fan-out: children, per-child budgets, outcomes, the result and the events.

Plain frozen dataclasses, imported by ``_fanout`` (which runs a fan-out), ``_child`` (which
runs one child), ``_merge`` (which merges the outcomes) and by users through
``bastion.agent``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from bastion.core import RunErrorInfo, RunStatus, SubagentEvent, Usage, UserError

if TYPE_CHECKING:
    from bastion.agent import AgentLike

    from ._merge_guard import GuardReport

__all__ = [
    "ChildBudget",
    "ChildResult",
    "FanOutChild",
    "FanOutChildEndEvent",
    "FanOutEvent",
    "FanOutMergedEvent",
    "FanOutResult",
    "FanOutSpawnedEvent",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildBudget:
    """What each child of a fan-out may spend; ``None`` is no limit.

    A child over its budget is stopped and counts as failed, with error code
    ``budget_exceeded``: ``tokens`` is checked after each of its model calls (the call that
    crosses it is the last; a team or an external agent, on the usage it reports when it
    ends), ``tool_calls`` before each tool call (the call over the budget is refused),
    ``duration`` (seconds, on the parent's clock) from the child's start.
    """

    tokens: int | None = None
    tool_calls: int | None = None
    duration: float | None = None

    def __post_init__(self) -> None:
        for name in ("tokens", "tool_calls", "duration"):
            value = getattr(self, name)
            if value is not None and (
                isinstance(value, bool) or not isinstance(value, int | float) or value <= 0
            ):
                raise UserError(f"ChildBudget({name}={value!r}): give a number > 0, or None.")


@dataclass(frozen=True, slots=True)
class FanOutChild:
    """One child of a fan-out: an agent (or team, or external agent) and its input.

    ``name`` (default: the agent's name) identifies the child in events, in the result and
    in the journal; names must be unique within one fan-out.
    """

    agent: AgentLike
    input: str
    name: str | None = None

    @property
    def label(self) -> str:
        """The child's name in events and results."""
        return self.name if self.name is not None else self.agent.name


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildResult:
    """How one child of a fan-out ended.

    Attributes:
        name: The child's name.
        index: Its position in the ``children`` list.
        status: Its run's status; ``failed`` also for a child stopped by its budget, and
            ``aborted`` for a sibling cancelled by ``first_success`` (or never started).
        output: Its output (``None`` unless ``completed``).
        text: The text of its last answer.
        error: Why it failed.
        usage: What it spent.
        run_id: Its run's id (empty when it never started).
        untrusted: It read untrusted content (a tool output from outside).
        restored: Read back from the journal of an earlier attempt, not run again.
    """

    name: str
    index: int
    status: RunStatus
    output: Any = None
    text: str = ""
    error: RunErrorInfo | None = None
    usage: Usage = field(default_factory=Usage)
    run_id: str = ""
    untrusted: bool = False
    restored: bool = False

    @property
    def ok(self) -> bool:
        """True when the child completed."""
        return self.status == "completed"


@dataclass(frozen=True, kw_only=True, slots=True)
class FanOutResult:
    """The outcome of a fan-out.

    Attributes:
        fan_out_id: The fan-out's id (its journal's run id when the agent has a store).
        output: The merged output; ``None`` when nothing could be merged (see ``error``).
        children: Every child's outcome, in registration order.
        strategy: The merge strategy used.
        usage: Usage of every child and of the judge, summed.
        chosen: The child the merge picked (``first_success``, a judge's pick), if any.
        error: Why there is no output (every child failed, the judge failed, …).
        guard: The merge guard's report (``judge`` merges).
    """

    fan_out_id: str
    output: Any
    children: tuple[ChildResult, ...]
    strategy: str
    usage: Usage
    chosen: str | None = None
    error: RunErrorInfo | None = None
    guard: GuardReport | None = None

    @property
    def ok(self) -> bool:
        """True when the merge produced an output."""
        return self.error is None

    @property
    def failed(self) -> tuple[ChildResult, ...]:
        """The children that did not complete."""
        return tuple(c for c in self.children if not c.ok)

    def child(self, name: str) -> ChildResult:
        """The outcome of the child called ``name``.

        Raises:
            KeyError: No child has that name.
        """
        for child in self.children:
            if child.name == name:
                return child
        raise KeyError(f"No child {name!r}; children: {', '.join(c.name for c in self.children)}.")


@dataclass(kw_only=True, slots=True)
class FanOutSpawnedEvent:
    """A child of a fan-out started (it got one of the ``max_concurrent_children`` slots)."""

    fan_out_id: str
    child: str
    index: int
    run_id: str
    type: Literal["agent.fanout.spawned"] = "agent.fanout.spawned"


@dataclass(kw_only=True, slots=True)
class FanOutChildEndEvent:
    """A child of a fan-out ended (after its outcome was journaled)."""

    fan_out_id: str
    child: str
    index: int
    status: RunStatus
    error: RunErrorInfo | None = None
    restored: bool = False
    type: Literal["agent.fanout.child.end"] = "agent.fanout.child.end"


@dataclass(kw_only=True, slots=True)
class FanOutMergedEvent:
    """The children's outcomes were merged: the last event of a fan-out."""

    fan_out_id: str
    strategy: str
    succeeded: tuple[str, ...]
    failed: tuple[str, ...]
    chosen: str | None = None
    error: RunErrorInfo | None = None
    type: Literal["agent.fanout.merged"] = "agent.fanout.merged"


FanOutEvent: TypeAlias = (
    FanOutSpawnedEvent | FanOutChildEndEvent | FanOutMergedEvent | SubagentEvent
)
"""An event of a fan-out's stream (``type`` tells which); a child's own events come
wrapped in ``SubagentEvent`` (``tool_call_id`` is the child's name, ``child_run_id`` its run)."""
