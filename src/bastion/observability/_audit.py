"""Audit records of tool executions and the counters behind them.

Every execution the executor finishes becomes one :class:`AuditRecord`, delivered to the
subscribers of the agent's :class:`ToolAudit`; building the record is skipped while nobody
subscribes. :class:`Counters` are always kept (a dict increment per event) and read as a
snapshot, under the stable prefixes ``tool.executor.*``, ``tool.inbound.sanitization.*``,
``tool.result.*``, ``tool.cache.*``, ``tool.collision.*`` and ``tool.retrieval.*``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["AuditRecord", "AuditSink", "Counters", "ToolAudit"]


@dataclass(kw_only=True, slots=True, frozen=True)
class AuditRecord:
    """What one tool execution did.

    Attributes:
        run_id: The run the call belongs to.
        tool_call_id: The call's id.
        tool_name: The tool.
        classification: The tool's classification (``Tool.classification()``).
        outcome: ``"ok"``, or the error kind (``"timeout"``, ``"approval_denied"``, …).
        duration: Seconds the call took (0 when it never ran).
        truncation: The truncation strategy applied, or ``None`` when the result fit.
        original_tokens: Estimated tokens of the result before truncation.
        sanitization_policy: The inbound policy applied to the result.
        sanitization_hits: How many injection patterns matched.
        cached: True when the result came from the tool's cache.
        timestamp: Wall-clock time (seconds since the epoch) when the call ended.
        sandbox: What the call's runtime was (``"none"`` or the sandbox's limits), or
            ``None`` when the run has no runtime. The tool's Python code always runs in
            this process; the sandbox confines what it runs through ``ctx.runtime``.
        memory_changed: Memory regions the call changed although its tool declares no
            side effects (the memory guard's mismatches).
    """

    run_id: str
    tool_call_id: str
    tool_name: str
    classification: dict[str, Any]
    outcome: str
    duration: float = 0.0
    truncation: str | None = None
    original_tokens: int = 0
    sanitization_policy: str | None = None
    sanitization_hits: int = 0
    cached: bool = False
    timestamp: float = 0.0
    sandbox: str | None = None
    memory_changed: tuple[str, ...] = ()


AuditSink = Callable[[AuditRecord], None]


class Counters:
    """Named monotonic counters, safe to bump from worker threads.

    Names follow ``<prefix>.<what>.total``; a label is appended as ``{key=value}``.
    """

    __slots__ = ("_lock", "_values")

    def __init__(self) -> None:
        self._values: dict[str, int] = {}
        self._lock = threading.Lock()

    def incr(self, name: str, amount: int = 1, **labels: str) -> None:
        """Add ``amount`` to the counter ``name`` (with ``labels``, if any)."""
        if labels:
            name = name + "{" + ",".join(f"{k}={v}" for k, v in sorted(labels.items())) + "}"
        with self._lock:
            self._values[name] = self._values.get(name, 0) + amount

    def get(self, name: str) -> int:
        """The current value of one counter (0 when never bumped)."""
        return self._values.get(name, 0)

    def snapshot(self) -> dict[str, int]:
        """A copy of every counter, sorted by name."""
        with self._lock:
            return dict(sorted(self._values.items()))


@dataclass(slots=True)
class ToolAudit:
    """Where audit records go: subscribe a sink; read the counters.

    Example::

        unsubscribe = agent.audit.subscribe(rows.append)
        ...
        agent.audit.counters.snapshot()["tool.executor.calls.total"]
    """

    counters: Counters = field(default_factory=Counters)
    _sinks: list[AuditSink] = field(default_factory=list[AuditSink])

    @property
    def active(self) -> bool:
        """True when a sink is subscribed (records are only built then)."""
        return bool(self._sinks)

    def subscribe(self, sink: AuditSink) -> Callable[[], None]:
        """Deliver every record to ``sink``; returns a function that unsubscribes it."""
        self._sinks.append(sink)

        def unsubscribe() -> None:
            if sink in self._sinks:
                self._sinks.remove(sink)

        return unsubscribe

    def emit(self, record: AuditRecord) -> None:
        """Deliver a record. A sink that raises is dropped from this delivery only."""
        for sink in tuple(self._sinks):
            try:
                sink(record)
            except Exception:  # an observer must never break the executor
                self.counters.incr("tool.audit.sink_errors.total")
