"""Durable governance state: what a suspended run keeps of its governor, typed.

A run that suspends on an interrupt keeps, in its ``RunState``, the interrupts it waits on
(:class:`SuspendedInterrupt`) and the governor's :class:`GovernorSnapshot` (counters,
mutations, pending and decided interrupts). All are frozen dataclasses; one pydantic
``TypeAdapter`` over their union (discriminated by ``type``) dumps and loads them, and
pydantic is imported only then. Forms written before these types existed (plain dicts
without ``type``) still load: :func:`upgrade_legacy` turns them into the typed form first.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeAlias, cast

from bastion.core import UserError

from ._interrupts import Interrupt, InterruptDecision

if TYPE_CHECKING:
    from pydantic import GetCoreSchemaHandler, TypeAdapter
    from pydantic_core import CoreSchema

__all__ = [
    "SNAPSHOT_VERSION",
    "CounterRecord",
    "DecidedInterrupt",
    "GovernanceState",
    "GovernorSnapshot",
    "MutationRecord",
    "SuspendedInterrupt",
    "dump_governance_state",
    "load_governance_state",
    "upgrade_legacy",
]

SNAPSHOT_VERSION = 1
_DECISION_FIELDS = ("reason", "value", "oracle", "limit_type", "max", "window", "approver")


def _before(
    upgrade: Callable[[object], object], source: object, handler: GetCoreSchemaHandler
) -> CoreSchema:
    """The class's pydantic schema, after ``upgrade`` turned a legacy dict into its form."""
    from pydantic_core import core_schema

    return core_schema.no_info_before_validator_function(upgrade, handler(source))


@dataclass(frozen=True, slots=True, kw_only=True)
class CounterRecord:
    """One counter in a snapshot: its key, totals, maxima and the amounts in its window."""

    key: str
    oracle: str
    type: str
    window: str
    scope: str | None = None
    accumulated: float
    max: float | None = None
    original_max: float | None = None
    window_start: float | None = None
    seconds: float | None = None
    events: tuple[tuple[float, float], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MutationRecord:
    """A limit's max changed at run time: by whom, to what, when."""

    limit: str
    max: float
    at: float
    by: str


@dataclass(frozen=True, slots=True, kw_only=True)
class DecidedInterrupt:
    """A decision taken on an interrupt, waiting for the next check of its action."""

    action: str
    node: str
    decision: InterruptDecision
    type: Literal["decided_interrupt"] = "decided_interrupt"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: object, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Pydantic's schema: legacy dicts are upgraded first."""
        return _before(_upgrade_decided, source, handler)


def _mapping(data: object) -> Mapping[str, object] | None:
    return cast("Mapping[str, object]", data) if isinstance(data, Mapping) else None


def _upgrade_decided(data: object) -> object:
    flat = _mapping(data)
    if flat is None or "type" in flat or isinstance(flat.get("decision"), Mapping):
        return data
    return _decided_form(flat)


def _decided_form(flat: Mapping[str, object]) -> dict[str, object]:
    """A legacy flat decided interrupt in the typed form (without its ``type``)."""
    decision = {"decision": flat.get("decision")}
    decision.update((name, flat[name]) for name in _DECISION_FIELDS if name in flat)
    return {"action": flat.get("action"), "node": flat.get("node", ""), "decision": decision}


@dataclass(frozen=True, slots=True, kw_only=True)
class GovernorSnapshot:
    """A governor's state: load it into a governor with the same configuration."""

    taken_at: float
    counters: tuple[CounterRecord, ...] = ()
    mutations: tuple[MutationRecord, ...] = ()
    pending: tuple[Interrupt, ...] = ()
    decided: tuple[DecidedInterrupt, ...] = ()
    version: int = SNAPSHOT_VERSION
    type: Literal["governor_snapshot"] = "governor_snapshot"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: object, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Pydantic's schema: legacy dicts are upgraded first."""
        return _before(_upgrade_snapshot, source, handler)


def _upgrade_snapshot(data: object) -> object:
    snapshot = _mapping(data)
    if snapshot is None:
        return data
    return _snapshot_form(snapshot)


def _snapshot_form(snapshot: Mapping[str, object]) -> Mapping[str, object]:
    """A snapshot in the typed form; UserError for an unknown version."""
    version = snapshot.get("version", SNAPSHOT_VERSION)
    if version != SNAPSHOT_VERSION:
        raise UserError(
            f"Unknown governance snapshot version {version!r}; expected {SNAPSHOT_VERSION}."
        )
    if "type" in snapshot:
        return snapshot
    return {
        **snapshot,
        "type": "governor_snapshot",
        "decided": [_upgrade_decided(item) for item in _items(snapshot.get("decided", ()))],
    }


@dataclass(frozen=True, slots=True, kw_only=True)
class SuspendedInterrupt:
    """An interrupt a run is suspended on.

    Attributes:
        interrupt: The interrupt (its ``id`` is what a directive decides).
        on: What it paused: a ``model`` call, a ``tool`` call or a tool-call ``round``.
        tool_call_ids: The tool calls it holds (they wait for its decision).
    """

    interrupt: Interrupt
    on: Literal["model", "tool", "round"]
    tool_call_ids: tuple[str, ...] = ()
    type: Literal["suspended_interrupt"] = "suspended_interrupt"

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: object, handler: GetCoreSchemaHandler
    ) -> CoreSchema:
        """Pydantic's schema: legacy dicts are upgraded first."""
        return _before(_upgrade_suspended, source, handler)

    @property
    def id(self) -> str:
        """The interrupt's id."""
        return self.interrupt.id

    def to_dict(self) -> dict[str, Any]:
        """The flat JSON form: ``Interrupt.to_dict()`` plus ``on`` and ``tool_call_ids``."""
        return {
            **self.interrupt.to_dict(),
            "on": self.on,
            "tool_call_ids": list(self.tool_call_ids),
        }


def _items(value: object) -> Sequence[object]:
    return cast("Sequence[object]", value) if isinstance(value, (list, tuple)) else ()


def _upgrade_suspended(data: object) -> object:
    flat = _mapping(data)
    if flat is None or "type" in flat or "interrupt" in flat:
        return data
    return _suspended_form(flat)


def _suspended_form(flat: Mapping[str, object]) -> dict[str, object]:
    """A legacy flat suspended interrupt in the typed form (without its ``type``)."""
    return {
        "interrupt": Interrupt.from_dict(flat).to_dict(),
        "on": flat.get("on"),
        "tool_call_ids": list(_items(flat.get("tool_call_ids", ()))),
    }


GovernanceState: TypeAlias = GovernorSnapshot | SuspendedInterrupt | DecidedInterrupt
"""Every piece of durable governance state, discriminated by ``type``."""


def upgrade_legacy(data: Mapping[str, object]) -> Mapping[str, object]:
    """Give a dict written before ``type`` existed its typed form (others pass unchanged)."""
    if "type" in data:
        return data
    if "version" in data or "counters" in data:
        return _snapshot_form(data)
    if "on" in data:
        form = data if "interrupt" in data else _suspended_form(data)
        return {**form, "type": "suspended_interrupt"}
    if "action" in data and "decision" in data:
        form = data if isinstance(data.get("decision"), Mapping) else _decided_form(data)
        return {**form, "type": "decided_interrupt"}
    return data


@cache
def _adapter() -> TypeAdapter[GovernanceState]:
    from pydantic import Field, TypeAdapter

    return TypeAdapter(Annotated[GovernanceState, Field(discriminator="type")])


def dump_governance_state(state: GovernanceState) -> dict[str, Any]:
    """Return ``state`` as JSON-ready data (with its ``type``)."""
    return _adapter().dump_python(state, mode="json")


def load_governance_state(data: Mapping[str, object]) -> GovernanceState:
    """Load what :func:`dump_governance_state` wrote, or a legacy dict form.

    Raises:
        UserError: For data that is none of the durable governance forms, or a snapshot of
            an unknown version.
    """
    from pydantic import ValidationError

    try:
        return _adapter().validate_python(upgrade_legacy(data))
    except ValidationError as exc:
        raise UserError(f"Not durable governance state: {exc}") from None
