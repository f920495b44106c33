"""Typed signals of the governor: what it tells observers as limits fill and trip.

Every action, denial, limit breach, accumulation, mutation and interrupt produces one of
these when someone subscribed (``Governor.subscribe``); with no subscriber none is built.
Each carries the action's key and its scope ids. ``name`` gives the dotted signal name;
for ``oracle.policy.<key>`` and ``oracle.mutation.<key>`` the key is the oracle owning the
limit.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, fields
from typing import Any, Literal, TypeAlias, cast

__all__ = [
    "DataListener",
    "DeniedSignal",
    "ExceededSignal",
    "ExecInSignal",
    "ExecOutSignal",
    "GovernanceSignal",
    "InterruptInSignal",
    "InterruptOutSignal",
    "MutationSignal",
    "PolicySignal",
    "SignalListener",
    "signal_data",
]


def _no_breakdown() -> dict[str, float]:
    return {}


@dataclass(kw_only=True, slots=True)
class _Scope:
    key: str
    node: str = ""
    invocation_id: str = ""
    graph_id: str = ""
    node_id: str = ""
    ancestry: tuple[str, ...] = ()
    timestamp: float = 0.0


@dataclass(kw_only=True, slots=True)
class ExecInSignal(_Scope):
    """An action passed its policies and limits and starts."""

    action_id: str
    type: Literal["oracle.exec.in"] = "oracle.exec.in"

    @property
    def name(self) -> str:
        """The dotted signal name."""
        return self.type


@dataclass(kw_only=True, slots=True)
class ExecOutSignal(_Scope):
    """An action ended (``error`` names the exception type when it failed)."""

    action_id: str
    duration: float
    attempts: int = 1
    error: str | None = None
    type: Literal["oracle.exec.out"] = "oracle.exec.out"

    @property
    def name(self) -> str:
        """The dotted signal name."""
        return self.type


@dataclass(kw_only=True, slots=True)
class DeniedSignal(_Scope):
    """A policy (or a decision) denied the action."""

    reason: str
    policy_id: str = ""
    forced: bool = False
    type: Literal["oracle.denied"] = "oracle.denied"

    @property
    def name(self) -> str:
        """The dotted signal name."""
        return self.type


@dataclass(kw_only=True, slots=True)
class ExceededSignal(_Scope):
    """A limit was found used up before the action; nothing ran."""

    oracle: str
    limit_type: str
    window: str
    current: float
    max: float
    mutable: bool = False
    type: Literal["oracle.exceeded"] = "oracle.exceeded"

    @property
    def name(self) -> str:
        """The dotted signal name."""
        return self.type


@dataclass(kw_only=True, slots=True)
class InterruptInSignal(_Scope):
    """An interrupt was raised (``interrupt`` is its JSON form)."""

    interrupt: Mapping[str, Any]
    type: Literal["oracle.interrupt.in"] = "oracle.interrupt.in"

    @property
    def name(self) -> str:
        """The dotted signal name."""
        return self.type


@dataclass(kw_only=True, slots=True)
class InterruptOutSignal(_Scope):
    """An interrupt was resolved: ``retry``, ``deny``, ``result``, ``mutate`` or ``error``."""

    interrupt_id: str
    decision: str
    reason: str = ""
    type: Literal["oracle.interrupt.out"] = "oracle.interrupt.out"

    @property
    def name(self) -> str:
        """The dotted signal name."""
        return self.type


@dataclass(kw_only=True, slots=True)
class PolicySignal(_Scope):
    """A limit's counter was accumulated after the action (``oracle.policy.<oracle>``)."""

    oracle: str
    limit_type: str
    window: str
    amount: float
    accumulated: float
    max: float
    breakdown: Mapping[str, float] = field(default_factory=_no_breakdown)
    type: Literal["oracle.policy"] = "oracle.policy"

    @property
    def name(self) -> str:
        """The dotted signal name, ``oracle.policy.<oracle>``."""
        return f"oracle.policy.{self.oracle}"


@dataclass(kw_only=True, slots=True)
class MutationSignal(_Scope):
    """A limit's max was changed at runtime (``oracle.mutation.<oracle>``)."""

    oracle: str
    limit_type: str
    window: str
    previous_max: float
    new_max: float
    approved_by: str
    accepted: bool = True
    type: Literal["oracle.mutation"] = "oracle.mutation"

    @property
    def name(self) -> str:
        """The dotted signal name, ``oracle.mutation.<oracle>``."""
        return f"oracle.mutation.{self.oracle}"


GovernanceSignal: TypeAlias = (
    ExecInSignal
    | ExecOutSignal
    | DeniedSignal
    | ExceededSignal
    | InterruptInSignal
    | InterruptOutSignal
    | PolicySignal
    | MutationSignal
)
SignalListener: TypeAlias = Callable[[GovernanceSignal], object]
DataListener: TypeAlias = Callable[[str, dict[str, Any]], object]
"""``(name, data)``: a signal's dotted name and its JSON-ready fields (``signal_data``)."""

_CONVERTERS: dict[type, Callable[[Any], dict[str, Any]]] = {}


def _converter(cls: type) -> Callable[[Any], dict[str, Any]]:
    """Compile ``signal -> data`` for one signal type: a single dict display.

    Generated the way ``dataclasses`` generates ``__init__``: a run turns about ten signals
    into events, and a loop over fields costs several times more per signal.
    """
    items: list[str] = []
    for f in fields(cls):
        if f.name == "type":
            continue
        annotation = str(f.type)  # a string: ``from __future__ import annotations``
        if annotation.startswith("tuple"):
            value = f"list(s.{f.name})"  # ancestry
        elif annotation.startswith(("Mapping", "dict")):
            value = f"dict(s.{f.name})"  # breakdown, interrupt
        else:
            value = f"s.{f.name}"
        items.append(f"{f.name!r}: {value}")
    namespace: dict[str, Any] = {}
    exec(f"def convert(s):\n    return {{{', '.join(items)}}}\n", {}, namespace)
    return cast("Callable[[Any], dict[str, Any]]", namespace["convert"])


def signal_data(signal: GovernanceSignal) -> dict[str, Any]:
    """Return a signal's fields as JSON-ready data (without its ``type``)."""
    convert = _CONVERTERS.get(type(signal))
    if convert is None:
        convert = _CONVERTERS[type(signal)] = _converter(type(signal))
    return convert(signal)
