"""The signal bus of a governor: subscribers, routine vs decision signals, and emitting them.

Decisions (denials, breaches, interrupts, mutations) go to every subscriber; the routine
signals every allowed action produces (``oracle.exec.in/out``, ``oracle.policy.<oracle>``)
only to those that asked for them, and are not built at all when nobody did.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping, Sequence
from types import MappingProxyType
from typing import Any

from bastion.core import ListenerWarning

from ._plan import BoundLimit
from ._signals import DataListener, GovernanceSignal, PolicySignal, SignalListener, signal_data

__all__ = ["SignalBus"]

# Shared by every signal without a breakdown: read-only, so listeners cannot alter it.
_NO_BREAKDOWN: Mapping[str, float] = MappingProxyType({})


def _call_each(listeners: Sequence[Callable[..., object]], name: str, *args: Any) -> None:
    for listener in listeners:
        try:
            listener(*args)
        except Exception as exc:
            warnings.warn(
                f"Governance listener {listener!r} raised {exc!r} on {name}.",
                ListenerWarning,
                stacklevel=3,
            )


class SignalBus:
    """Who listens to a governor's signals, and how each signal reaches them.

    ``listeners`` get every signal; ``routine`` (a subset) also the routine ones. Both are
    read on the hot path: an empty list means no signal object needs building.
    """

    __slots__ = ("_data_listeners", "_data_only", "listeners", "routine")

    def __init__(self) -> None:
        self.listeners: list[SignalListener] = []
        self.routine: list[SignalListener] = []
        # Data listeners, by the typed listener that wraps each in ``listeners``.
        self._data_listeners: dict[SignalListener, DataListener] = {}
        # Every routine listener takes data: hot-path signals skip the typed object.
        self._data_only: tuple[DataListener, ...] | None = None

    def subscribe(self, listener: SignalListener, *, routine: bool = True) -> Callable[[], None]:
        """Add ``listener``; return a function that removes it."""
        self._add(listener, routine=routine)

        def unsubscribe() -> None:
            self._remove(listener)

        return unsubscribe

    def subscribe_data(self, listener: DataListener, *, routine: bool = True) -> Callable[[], None]:
        """Add a ``(name, data)`` listener; return a function that removes it."""

        def typed(signal: GovernanceSignal) -> None:
            listener(signal.name, signal_data(signal))

        self._data_listeners[typed] = listener
        self._add(typed, routine=routine)

        def unsubscribe() -> None:
            self._data_listeners.pop(typed, None)
            self._remove(typed)

        return unsubscribe

    def _add(self, listener: SignalListener, *, routine: bool) -> None:
        self.listeners.append(listener)
        if routine:
            self.routine.append(listener)
        self._refresh()

    def _remove(self, listener: SignalListener) -> None:
        if listener in self.listeners:
            self.listeners.remove(listener)
        if listener in self.routine:
            self.routine.remove(listener)
        self._refresh()

    def _refresh(self) -> None:
        data = self._data_listeners
        routine = self.routine
        self._data_only = (
            tuple(data[listener] for listener in routine)
            if routine and all(listener in data for listener in routine)
            else None
        )

    def emit(self, signal: GovernanceSignal, routine: bool = False) -> None:
        """Give ``signal`` to its listeners; a listener that raises is warned about."""
        listeners = self.routine if routine else self.listeners
        if len(listeners) == 1:  # the usual case (one agent): no copy of the list
            _call_each(listeners, signal.name, signal)
        else:
            _call_each(tuple(listeners), signal.name, signal)

    def emit_policy(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self,
        bound: BoundLimit,
        amount: float,
        total: float,
        maximum: float,
        now: float,
        graph: str,
        invocation: str,
        key: str,
        node: str,
        breakdown: Mapping[str, float] | None,
    ) -> None:
        """Emit ``oracle.policy.<oracle>``: as data only when every listener takes data."""
        direct = self._data_only
        if direct is not None:
            # The same fields, in the same order, as signal_data(PolicySignal(...)).
            data: dict[str, Any] = {
                "key": key,
                "node": node,
                "invocation_id": invocation,
                "graph_id": graph,
                "node_id": "",
                "ancestry": [],
                "timestamp": now,
                "oracle": bound.oracle,
                "limit_type": bound.type,
                "window": bound.label,
                "amount": amount,
                "accumulated": total,
                "max": maximum,
                "breakdown": dict(breakdown) if breakdown else {},
            }
            _call_each(direct, bound.signal_name, bound.signal_name, data)
            return
        self.emit(
            PolicySignal(
                key=key,
                node=node,
                invocation_id=invocation,
                graph_id=graph,
                timestamp=now,
                oracle=bound.oracle,
                limit_type=bound.type,
                window=bound.label,
                amount=amount,
                accumulated=total,
                max=maximum,
                breakdown=dict(breakdown) if breakdown else _NO_BREAKDOWN,
            ),
            routine=True,
        )
