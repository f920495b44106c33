"""Counters as state, mixed into :class:`Governor` (snapshot and restore).

``snapshot()`` returns plain JSON-ready data: every counter (with its current and original
max and its window start), the runtime mutations, pending interrupts and decisions not yet
consumed. ``restore()`` loads it into a governor built with the same configuration, so a
resumed run keeps its budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bastion.core import Clock, UserError

from ._interrupts import Interrupt, InterruptDecision, decision_from_dict
from ._plan import BoundLimit, key_ancestry
from ._store import CounterRow, CounterStore

__all__ = ["SNAPSHOT_VERSION", "CounterView", "StateMixin"]

SNAPSHOT_VERSION = 1


@dataclass(kw_only=True, slots=True)
class CounterView:
    """One limit's counter as seen by an action (``Governor.counters``)."""

    oracle: str
    type: str
    window: str
    accumulated: float
    max: float
    original_max: float
    window_start: float | None


def _decision_to_dict(decision: InterruptDecision) -> dict[str, Any]:
    data: dict[str, Any] = {"decision": decision.decision}
    for name in ("reason", "value", "oracle", "limit_type", "max", "window", "approver"):
        if hasattr(decision, name):
            data[name] = getattr(decision, name)
    return data


class StateMixin:
    """Snapshot, restore, inspection and scope cleanup of a governor's counters."""

    clock: Clock
    store: CounterStore
    _oracle_limits: dict[str, list[BoundLimit]]
    _pending: dict[str, Interrupt]
    _decided: dict[tuple[str, str], InterruptDecision]
    _mutations: dict[str, Any]

    def _max(self, bound: BoundLimit, now: float) -> float: ...

    def _init_state(self) -> None:
        self._scoped: dict[str, set[str]] = {}
        self._bound_by_id = {
            bound.id: bound for bounds in self._oracle_limits.values() for bound in bounds
        }

    async def counters(
        self, key: str, *, graph: str = "", invocation: str = ""
    ) -> list[CounterView]:
        """Return the counters that apply to ``key``, its ancestors' first."""
        now = self.clock.now()
        views: list[CounterView] = []
        for level in key_ancestry(key):
            for bound in self._oracle_limits.get(level, ()):
                window = bound.limit.parsed_window
                counter = bound.id
                if window.scope is not None:
                    counter = f"{counter}|{graph if window.scope == 'graph' else invocation}"
                views.append(
                    CounterView(
                        oracle=bound.oracle,
                        type=bound.limit.type,
                        window=window.label,
                        accumulated=await self.store.get(counter, now=now, seconds=window.seconds),
                        max=self._max(bound, now),
                        original_max=bound.limit.max,
                        window_start=await self.store.window_start(
                            counter, now=now, seconds=window.seconds
                        ),
                    )
                )
        return views

    async def end_scope(self, *, graph: str | None = None, invocation: str | None = None) -> None:
        """Forget the ``graph``- or ``invocation``-window counters of a finished scope."""
        for name, scope_id in (("graph", graph), ("invocation", invocation)):
            if scope_id is not None:
                keys = self._scoped.pop(f"{name}:{scope_id}", None)
                if keys:
                    await self.store.discard(keys)

    async def snapshot(self) -> dict[str, Any]:
        """Return every counter, mutation and pending interrupt as JSON-ready data."""
        now = self.clock.now()
        counters: list[dict[str, Any]] = []
        for row in await self.store.dump(now=now):
            oracle, kind, window, *scope = row.key.split("|", 3)
            bound = self._bound_by_id.get(f"{oracle}|{kind}|{window}")
            counters.append(
                {
                    "key": row.key,
                    "oracle": oracle,
                    "type": kind,
                    "window": window,
                    "scope": scope[0] if scope else None,
                    "accumulated": row.total,
                    "max": self._max(bound, now) if bound is not None else None,
                    "original_max": bound.limit.max if bound is not None else None,
                    "window_start": row.events[0][0] if row.events else None,
                    "seconds": row.seconds,
                    "events": [[t, a] for t, a in row.events],
                }
            )
        return {
            "version": SNAPSHOT_VERSION,
            "taken_at": now,
            "counters": counters,
            "mutations": [
                {"limit": limit_id, "max": m.max, "at": m.at, "by": m.by}
                for limit_id, m in self._mutations.items()
            ],
            "pending": [interrupt.to_dict() for interrupt in self._pending.values()],
            "decided": [
                {"action": action, "node": node, **_decision_to_dict(decision)}
                for (action, node), decision in self._decided.items()
            ],
        }

    async def restore(self, snapshot: Mapping[str, Any]) -> None:
        """Load a :meth:`snapshot` (possibly after a JSON round trip).

        Raises:
            UserError: For a snapshot of an unknown version.
        """
        from ._interrupting import Mutation

        version = snapshot.get("version")
        if version != SNAPSHOT_VERSION:
            raise UserError(
                f"Unknown governance snapshot version {version!r}; expected {SNAPSHOT_VERSION}."
            )
        rows = [
            CounterRow(
                key=str(row["key"]),
                seconds=None if row["seconds"] is None else float(row["seconds"]),
                total=float(row["accumulated"]),
                events=[(float(t), float(a)) for t, a in row["events"]],
            )
            for row in snapshot["counters"]
        ]
        await self.store.load(rows)
        for row in snapshot["counters"]:
            scope = row.get("scope")
            if scope is not None:
                window = str(row["window"])
                self._scoped.setdefault(f"{window}:{scope}", set()).add(str(row["key"]))
        for item in snapshot.get("mutations", ()):
            self._mutations[str(item["limit"])] = Mutation(
                max=float(item["max"]), at=float(item["at"]), by=str(item["by"])
            )
        for item in snapshot.get("pending", ()):
            interrupt = Interrupt.from_dict(item)
            self._pending[interrupt.id] = interrupt
        for item in snapshot.get("decided", ()):
            self._decided[str(item["action"]), str(item["node"])] = decision_from_dict(item)
