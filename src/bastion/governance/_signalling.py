"""Signals of a governor: subscribers, routine vs decision signals, and emitting them.

A mixin of :class:`~bastion.governance.Governor`. Decisions (denials, breaches, interrupts,
mutations) go to every subscriber; the routine signals every allowed action produces
(``oracle.exec.in/out``, ``oracle.policy.<oracle>``) only to those that asked for them, and
are not built at all when nobody did.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from bastion.core import ListenerWarning

from ._plan import BoundLimit
from ._signals import DataListener, GovernanceSignal, PolicySignal, SignalListener, signal_data

if TYPE_CHECKING:
    from ._interrupting import Mutation

__all__ = ["Signalling"]

# Shared by every signal without a breakdown: read-only, so listeners cannot alter it.
_NO_BREAKDOWN: Mapping[str, float] = MappingProxyType({})


class Signalling:
    """Who listens to a governor's signals, and how each signal reaches them."""

    _mutations: dict[str, Mutation]

    if TYPE_CHECKING:

        def _max(self, bound: BoundLimit, now: float) -> float: ...

    def _init_signalling(self) -> None:
        self._listeners: list[SignalListener] = []
        # The listeners that also take the routine signals (every action's exec in/out and
        # every limit's accumulation); the others get decisions only.
        self._routine: list[SignalListener] = []
        # Data listeners, by the typed listener that wraps each in ``_listeners``.
        self._data_listeners: dict[SignalListener, DataListener] = {}
        # Every routine listener takes data: hot-path signals skip the typed object.
        self._data_only: tuple[DataListener, ...] | None = None

    def subscribe(self, listener: SignalListener, *, routine: bool = True) -> Callable[[], None]:
        """Call ``listener`` with every signal from now on; return a function that stops it.

        With ``routine=False`` it gets the decisions only: denials, breaches, interrupts and
        mutations, not the routine ``oracle.exec.in/out`` and ``oracle.policy.<oracle>``
        signals every allowed action produces.
        """
        self._add_listener(listener, routine=routine)

        def unsubscribe() -> None:
            self._remove_listener(listener)

        return unsubscribe

    def subscribe_data(self, listener: DataListener, *, routine: bool = True) -> Callable[[], None]:
        """Call ``listener(name, data)`` with every signal from now on, as JSON-ready data.

        ``data`` is what :func:`signal_data` returns for the typed signal; treat it as
        read-only (it may be shared by several data listeners). Cheaper than
        :meth:`subscribe` when nobody needs the typed objects. ``routine`` as for
        :meth:`subscribe`. Return a function that stops it.
        """

        def typed(signal: GovernanceSignal) -> None:
            listener(signal.name, signal_data(signal))

        self._data_listeners[typed] = listener
        self._add_listener(typed, routine=routine)

        def unsubscribe() -> None:
            self._remove_listener(typed)
            self._data_listeners.pop(typed, None)
            self._refresh_listeners()

        return unsubscribe

    def _add_listener(self, listener: SignalListener, *, routine: bool) -> None:
        self._listeners.append(listener)
        if routine:
            self._routine.append(listener)
        self._refresh_listeners()

    def _remove_listener(self, listener: SignalListener) -> None:
        if listener in self._listeners:
            self._listeners.remove(listener)
        if listener in self._routine:
            self._routine.remove(listener)
        self._refresh_listeners()

    def _refresh_listeners(self) -> None:
        data = self._data_listeners
        routine = self._routine
        self._data_only = (
            tuple(data[listener] for listener in routine)
            if routine and all(listener in data for listener in routine)
            else None
        )

    def _emit(self, signal: GovernanceSignal, routine: bool = False) -> None:
        listeners = self._routine if routine else self._listeners
        if len(listeners) == 1:  # the usual case (one agent): no copy of the list
            listener = listeners[0]
            try:
                listener(signal)
            except Exception as exc:
                warnings.warn(
                    f"Governance listener {listener!r} raised {exc!r} on {signal.name}.",
                    ListenerWarning,
                    stacklevel=2,
                )
            return
        for listener in tuple(listeners):
            try:
                listener(signal)
            except Exception as exc:
                warnings.warn(
                    f"Governance listener {listener!r} raised {exc!r} on {signal.name}.",
                    ListenerWarning,
                    stacklevel=2,
                )

    def _emit_policy(  # noqa: PLR0917 - hot path: positional arguments parse fastest
        self,
        bound: BoundLimit,
        amount: float,
        total: float,
        now: float,
        graph: str,
        invocation: str,
        key: str,
        node: str,
        breakdown: Mapping[str, float] | None,
    ) -> None:
        """Emit ``oracle.policy.<oracle>``: as data only when every listener takes data."""
        maximum = self._max(bound, now) if self._mutations else bound.max
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
            name = bound.signal_name
            for listener in direct:
                try:
                    listener(name, data)
                except Exception as exc:
                    warnings.warn(
                        f"Governance listener {listener!r} raised {exc!r} on {name}.",
                        ListenerWarning,
                        stacklevel=2,
                    )
            return
        self._emit(
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

    @staticmethod
    def _scope_fields(key: str, scope: tuple[Any, ...], now: float) -> dict[str, Any]:
        return {
            "key": key,
            "node": scope[0],
            "graph_id": scope[1],
            "invocation_id": scope[2],
            "node_id": scope[3],
            "ancestry": tuple(scope[4]),
            "timestamp": now,
        }
