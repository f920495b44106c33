"""The seam between the scheduler and durable storage: what it saves and when.

The scheduler calls a :class:`Checkpointer` as an execution goes: once when it starts, once
per node as soon as the node's body returned (before anything downstream runs), once per
round with that round's delta, once when it ends. Starting an execution whose id has a
checkpoint skips the nodes already finished and uses their saved outputs, so a resumed
execution re-runs only what had not finished. :class:`MemoryCheckpointer` keeps it all in
memory; durable stores implement the same protocol.

Node ids here are paths inside one execution (``"draft@0"``, ``"review@2"``); a nested
execution (a spawn, a mapped item) has its own execution id under its parent's.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Protocol, runtime_checkable

from bastion.governance import GovernorSnapshot

from ._signals import GraphStatus

__all__ = ["Checkpoint", "Checkpointer", "MemoryCheckpointer", "Step"]


def _no_outputs() -> dict[str, object]:
    return {}


@dataclass(frozen=True, kw_only=True, slots=True)
class Step:
    """One finished round (super-step): only what it added.

    Attributes:
        round: The round number, from 0.
        finished: Node id → output of the nodes that finished in this round.
        frontier: The nodes the next round starts from (targets of back edges that fired).
        counters: The governor's counters after the round.
    """

    round: int
    finished: Mapping[str, object]
    frontier: tuple[str, ...]
    counters: GovernorSnapshot | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class Checkpoint:
    """What is saved of one execution.

    Attributes:
        execution_id: The execution.
        graph: The graph's key.
        input: The execution's input.
        finished: Node id → output of every node that finished, in finishing order.
        round: The last round that finished (-1: none yet).
        frontier: The nodes the next round starts from.
        counters: The governor's counters after the last round.
        status: How the execution ended, or ``None`` while it has not.
        output: The execution's output, once ended.
    """

    execution_id: str
    graph: str
    input: object = None
    finished: Mapping[str, object] = field(default_factory=_no_outputs)
    round: int = -1
    frontier: tuple[str, ...] = ()
    counters: GovernorSnapshot | None = None
    status: GraphStatus | None = None
    output: object = None


@runtime_checkable
class Checkpointer(Protocol):
    """Where the scheduler saves an execution as it goes (see the module docstring)."""

    async def load(self, execution_id: str) -> Checkpoint | None:
        """The saved state of an execution, or ``None`` when there is none."""
        ...

    async def execution_started(self, execution_id: str, *, graph: str, input: object) -> None:
        """An execution starts (or restarts from its checkpoint)."""
        ...

    async def node_finished(
        self, execution_id: str, node_id: str, round: int, output: object
    ) -> None:
        """A node's body returned ``output``; called before anything downstream runs."""
        ...

    async def step_finished(self, execution_id: str, step: Step) -> None:
        """A round finished; ``step`` holds only what it added."""
        ...

    async def execution_ended(
        self, execution_id: str, *, status: GraphStatus, output: object
    ) -> None:
        """An execution ended (``suspended`` and ``aborted`` executions may be resumed)."""
        ...


class MemoryCheckpointer:
    """A :class:`Checkpointer` in a dict: resume within one process, inspect in tests."""

    def __init__(self) -> None:
        self.checkpoints: dict[str, Checkpoint] = {}
        self.steps: dict[str, list[Step]] = {}
        self._finished: dict[str, dict[str, object]] = {}

    async def load(self, execution_id: str) -> Checkpoint | None:
        """The saved state of an execution, or ``None``."""
        saved = self.checkpoints.get(execution_id)
        if saved is None:
            return None
        return replace(saved, finished=dict(self._finished.get(execution_id, {})))

    async def execution_started(self, execution_id: str, *, graph: str, input: object) -> None:
        """Create the checkpoint (or mark a saved one as running again)."""
        saved = self.checkpoints.get(execution_id)
        if saved is None:
            self.checkpoints[execution_id] = Checkpoint(
                execution_id=execution_id, graph=graph, input=input
            )
        else:
            self.checkpoints[execution_id] = replace(saved, status=None, output=None)

    async def node_finished(
        self, execution_id: str, node_id: str, round: int, output: object
    ) -> None:
        """Save a finished node's output."""
        self._finished.setdefault(execution_id, {})[node_id] = output

    async def step_finished(self, execution_id: str, step: Step) -> None:
        """Record the round and its frontier."""
        saved = self.checkpoints[execution_id]
        self.checkpoints[execution_id] = replace(
            saved, round=step.round, frontier=step.frontier, counters=step.counters
        )
        self.steps.setdefault(execution_id, []).append(step)

    async def execution_ended(
        self, execution_id: str, *, status: GraphStatus, output: object
    ) -> None:
        """Record how the execution ended."""
        saved = self.checkpoints[execution_id]
        finished = dict(self._finished.get(execution_id, {}))
        self.checkpoints[execution_id] = replace(
            saved, finished=finished, status=status, output=output
        )
