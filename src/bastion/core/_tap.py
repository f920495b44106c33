"""The process-wide run tap: one observer fed every event of every run, with its context.

Instrumentation (tracing) installs it; nothing does by default. A run reads the tap once,
when it starts, and calls it for each event only when one was installed, so without it a
run does no per-event work. The tap must not raise: it is an observer, like an
``EventBus`` listener, and is responsible for its own errors.

A tap whose ``needs_deltas`` attribute is ``False`` does not read the pieces of a model's
answer (``text.delta``, ``reasoning.delta``, ``tool.call.*``, ``text.complete``): a run
nobody else watches (``agent.run()`` without an event bus) then builds none of them, as it
does without a tap.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._context import RunContext
    from ._events import AgentEvent

__all__ = ["RunTap", "current_run_tap", "set_run_tap"]

RunTap = Callable[["RunContext[Any]", "AgentEvent"], None]

_installed: list[RunTap] = []


def set_run_tap(tap: RunTap | None) -> RunTap | None:
    """Install ``tap`` for the runs that start from now on (``None`` removes it).

    Returns:
        The tap installed before, or ``None``.
    """
    previous = _installed[0] if _installed else None
    _installed.clear()
    if tap is not None:
        _installed.append(tap)
    return previous


def current_run_tap() -> RunTap | None:
    """The installed tap, or ``None`` (read once per run, when the run starts)."""
    return _installed[0] if _installed else None
