"""``Listeners``: a session's typed ``on`` / ``off`` and the dispatch of its events.

The base of :class:`~bastion.sessions.Session`. Listeners run in registration order and may
be async; only ``tool_call`` listeners decide (the first decision wins).
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any, Literal, Self, TypeAlias, overload

from bastion.core import UserError
from bastion.tools import Deny, Rewrite, ToolCallDecision, ToolCallRequest

from ._events import (
    EVENTS,
    ApprovalRequested,
    Compacted,
    InterruptRequested,
    MessageAdded,
    RunStarted,
    SessionError,
    SessionEvent,
    StepDone,
    TextDelta,
    ToolResult,
    TurnEnd,
)

__all__ = ["Listeners"]

Listener: TypeAlias = Callable[[Any], object]
"""A listener of some event: the overloads of :meth:`Listeners.on` check its value type."""


class Listeners:
    """Typed listeners of a session's events."""

    def __init__(self) -> None:
        self._listeners: dict[str, list[Listener]] = {name: [] for name in EVENTS}

    @overload
    def on(self, event: Literal["run"], fn: Callable[[RunStarted], object]) -> Self: ...
    @overload
    def on(self, event: Literal["text_delta"], fn: Callable[[TextDelta], object]) -> Self: ...
    @overload
    def on(self, event: Literal["message"], fn: Callable[[MessageAdded], object]) -> Self: ...
    @overload
    def on(self, event: Literal["tool_call"], fn: Callable[[ToolCallRequest], object]) -> Self: ...
    @overload
    def on(self, event: Literal["tool_result"], fn: Callable[[ToolResult], object]) -> Self: ...
    @overload
    def on(self, event: Literal["step"], fn: Callable[[StepDone], object]) -> Self: ...
    @overload
    def on(
        self, event: Literal["approval_requested"], fn: Callable[[ApprovalRequested], object]
    ) -> Self: ...
    @overload
    def on(
        self, event: Literal["interrupt_requested"], fn: Callable[[InterruptRequested], object]
    ) -> Self: ...
    @overload
    def on(self, event: Literal["turn_end"], fn: Callable[[TurnEnd], object]) -> Self: ...
    @overload
    def on(self, event: Literal["compacted"], fn: Callable[[Compacted], object]) -> Self: ...
    @overload
    def on(self, event: Literal["error"], fn: Callable[[SessionError], object]) -> Self: ...
    def on(self, event: SessionEvent, fn: Listener) -> Self:
        """Add a listener (chainable); listeners run in registration order and may be async.

        Only ``tool_call`` listeners decide: ``Deny(reason)`` or ``Rewrite(arguments)``;
        the first decision wins and later listeners are skipped for that call.

        Raises:
            UserError: ``event`` is not one of :data:`EVENTS`.
        """
        self._check(event)
        self._listeners[event].append(fn)
        return self

    def off(self, event: SessionEvent, fn: Listener) -> Self:
        """Remove a listener added with :meth:`on` (no error when absent)."""
        self._check(event)
        if fn in self._listeners[event]:
            self._listeners[event].remove(fn)
        return self

    @staticmethod
    def _check(event: str) -> None:
        if event not in EVENTS:
            raise UserError(f"Unknown session event {event!r}; expected one of {EVENTS}.")

    async def _emit(self, event: SessionEvent, payload: object) -> None:
        for fn in list(self._listeners[event]):
            value = fn(payload)
            if inspect.isawaitable(value):
                await value

    async def _ask(self, request: ToolCallRequest) -> ToolCallDecision | None:
        """The first decision of the ``tool_call`` listeners on ``request``, if any."""
        for fn in list(self._listeners["tool_call"]):
            value: object = fn(request)
            if inspect.isawaitable(value):
                value = await value
            if isinstance(value, (Deny, Rewrite)):
                return value
        return None
