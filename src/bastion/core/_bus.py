"""``EventBus``: agentium-style observers of a run's events.

Observers only observe: a listener's return value is ignored, and decisions belong to
hooks. Listeners are synchronous (to consume events asynchronously, iterate
``agent.stream()``); a listener that raises is reported with a :class:`ListenerWarning`
and does not disturb the run or the other listeners.
"""

from __future__ import annotations

import inspect
import warnings
from collections.abc import Callable
from typing import Any

from ._errors import UserError

__all__ = ["EventBus", "Listener", "ListenerWarning"]

Listener = Callable[[Any], object]
WILDCARD = "*"


class ListenerWarning(RuntimeWarning):
    """An event listener raised; the event went on to the other listeners."""


class EventBus:
    """Listeners by event type.

    Types are the events' dotted names (``"text.delta"``, ``"tool.execute.end"``), custom
    names tools emit, or ``"*"`` for every event.

    Example::

        bus = EventBus().on("tool.execute.end", lambda e: print(e.tool_name, e.result))
        agent = Agent("a", model=model, run_options=RunOptions(event_bus=bus))
    """

    __slots__ = ("_listeners",)

    def __init__(self) -> None:
        self._listeners: dict[str, list[tuple[Listener, bool]]] = {}

    @property
    def active(self) -> bool:
        """True when any listener is registered."""
        return bool(self._listeners)

    def on(self, event_type: str, listener: Listener) -> EventBus:
        """Call ``listener(event)`` for every event of ``event_type``; chainable."""
        return self._add(event_type, listener, once=False)

    def once(self, event_type: str, listener: Listener) -> EventBus:
        """Call ``listener(event)`` for the next event of ``event_type`` only; chainable."""
        return self._add(event_type, listener, once=True)

    def off(self, event_type: str, listener: Listener) -> EventBus:
        """Remove ``listener`` from ``event_type``; chainable."""
        entries = [e for e in self._listeners.get(event_type, []) if e[0] is not listener]
        self._set(event_type, entries)
        return self

    def remove_all_listeners(self, event_type: str | None = None) -> None:
        """Remove every listener of ``event_type``, or of every type when ``None``."""
        if event_type is None:
            self._listeners.clear()
        else:
            self._listeners.pop(event_type, None)

    def listener_count(self, event_type: str) -> int:
        """How many listeners ``event_type`` has (wildcard listeners not counted)."""
        return len(self._listeners.get(event_type, []))

    def emit(self, event_type: str, event: object) -> bool:
        """Call the listeners of ``event_type`` and the wildcard ones, in registration order.

        Returns:
            True when at least one listener was called.
        """
        called = False
        for key in (event_type, WILDCARD):
            entries = self._listeners.get(key)
            if not entries:
                continue
            if any(once for _, once in entries):
                self._set(key, [e for e in entries if not e[1]])
            for listener, _ in entries:
                called = True
                try:
                    listener(event)
                except Exception as exc:  # an observer must not break the run
                    warnings.warn(
                        f"Event listener {listener!r} for {event_type!r} raised "
                        f"{type(exc).__name__}: {exc}",
                        ListenerWarning,
                        stacklevel=2,
                    )
        return called

    def _add(self, event_type: str, listener: Listener, *, once: bool) -> EventBus:
        if inspect.iscoroutinefunction(listener):
            raise UserError(
                f"Listener {listener!r} is async; EventBus listeners are synchronous. "
                "Iterate agent.stream() to consume events asynchronously."
            )
        self._listeners.setdefault(event_type, []).append((listener, once))
        return self

    def _set(self, event_type: str, entries: list[tuple[Listener, bool]]) -> None:
        if entries:
            self._listeners[event_type] = entries
        else:
            self._listeners.pop(event_type, None)
