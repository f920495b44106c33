"""The memory guard: a tool that declares no side effects must not change the run's memory.

A :class:`MemoryGuard` names memory regions, each with a reader that returns the region's
current value. Before a guarded call runs (by default every ``pure`` or ``read_only``
tool), the executor snapshots each region (a deep copy of what the reader returns); after
the call it reads them again and compares. A region that changed is a mismatch: it is
counted (``tool.executor.memory_guard.mismatch.total{tier=<region>,tool=<name>}``), named
in the call's audit record and outcome, and with ``on_mismatch="fail"`` the call's result
is withheld and the model reads a ``sandbox_violation`` error instead.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Literal, TypeAlias

from bastion.core import RunContext, UserError

if TYPE_CHECKING:
    from ._tool import SideEffectClass, Tool

__all__ = ["MemoryGuard", "MemoryReader", "read_session_state"]

MemoryReader: TypeAlias = Callable[[RunContext[Any]], object]
"""Returns a memory region's current value (compared by ``==`` before and after a call)."""


def read_session_state(ctx: RunContext[Any]) -> object:
    """The run's ``session_state`` (the memory a session keeps between turns)."""
    return ctx.session_state


_SIDE_EFFECT_CLASSES = frozenset({"pure", "read_only", "side_effecting", "external_stateful"})


@dataclass(frozen=True, slots=True, kw_only=True)
class MemoryGuard:
    """Snapshot memory before a call that declares no side effects, verify it after.

    Example::

        Agent(..., tool_options=ToolOptions(memory_guard=MemoryGuard(
            regions={"session_state": read_session_state, "notes": lambda ctx: ctx.deps.notes},
            on_mismatch="fail",
        )))

    Attributes:
        regions: Region name (the ``tier`` of the counter) to its reader. Default: the
            run's ``session_state``.
        guarded: Side-effect classes whose calls are checked.
        on_mismatch: ``"audit"`` counts and records a change; ``"fail"`` also turns the
            call's result into a ``sandbox_violation`` error.

    Calls that run at the same time as a guarded one may change a region too; run tools
    that write memory alone (``execution_mode="sequential"``) for exact attribution.
    """

    regions: Mapping[str, MemoryReader] = field(
        default_factory=lambda: {"session_state": read_session_state}
    )
    guarded: frozenset[SideEffectClass] = frozenset({"pure", "read_only"})
    on_mismatch: Literal["audit", "fail"] = "audit"

    def __post_init__(self) -> None:
        if not self.regions:
            raise UserError("MemoryGuard needs at least one region.")
        for name, reader in self.regions.items():
            if not name or not callable(reader):
                raise UserError(
                    f"MemoryGuard region {name!r} needs a name and a callable reader, "
                    f"got {reader!r}."
                )
        unknown = sorted(set(self.guarded) - _SIDE_EFFECT_CLASSES)
        if unknown:
            raise UserError(
                f"MemoryGuard.guarded has unknown side-effect classes {unknown!r}; "
                f"use some of {sorted(_SIDE_EFFECT_CLASSES)!r}."
            )
        if self.on_mismatch not in ("audit", "fail"):
            raise UserError(
                f"MemoryGuard.on_mismatch must be 'audit' or 'fail', got {self.on_mismatch!r}."
            )
        object.__setattr__(self, "regions", dict(self.regions))
        object.__setattr__(self, "guarded", frozenset(self.guarded))

    def covers(self, tool: Tool) -> bool:
        """Whether calls of ``tool`` are checked."""
        return tool.side_effect_class in self.guarded

    def snapshot(self, ctx: RunContext[Any]) -> dict[str, object]:
        """Each region's value now, deep-copied so later changes do not reach it."""
        return {name: copy.deepcopy(read(ctx)) for name, read in self.regions.items()}

    def changed(self, before: Mapping[str, object], ctx: RunContext[Any]) -> tuple[str, ...]:
        """The regions whose value differs from ``before``, in the guard's order."""
        return tuple(name for name, read in self.regions.items() if read(ctx) != before[name])
