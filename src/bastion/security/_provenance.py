"""Provenance: where content came from, how far it is trusted, how sensitive it is.

Every tool output of an agent with a data-flow policy gets a :class:`Provenance`; the
run keeps each output's text with it in its :class:`DataFlowLedger` (part of the run's
state, so it is journaled with the state and survives suspension, resumption and context
compaction, which shortens the messages but not the ledger). The user's own messages are
ledger entries too, with trust ``user``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, TypeAlias

__all__ = [
    "DEFAULT_TRUST",
    "DataFlowLedger",
    "Provenance",
    "ProvenanceRecord",
    "Sensitivity",
    "SourceKind",
    "TrustLevel",
    "Violation",
]

TrustLevel: TypeAlias = Literal["trusted", "user", "untrusted"]
Sensitivity: TypeAlias = Literal["public", "internal", "secret"]
SourceKind: TypeAlias = Literal[
    "user", "tool", "web", "email", "file", "mcp", "skill", "subagent", "document"
]

DEFAULT_TRUST: Mapping[str, TrustLevel] = MappingProxyType(
    {
        "user": "user",
        "tool": "trusted",
        "web": "untrusted",
        "email": "untrusted",
        "file": "untrusted",
        "mcp": "untrusted",
        "skill": "untrusted",
        "subagent": "untrusted",
        "document": "untrusted",
    }
)
"""The trust of a source kind when nothing says otherwise: only the user's messages and
first-party tools are not untrusted."""


@dataclass(kw_only=True, slots=True, frozen=True)
class Provenance:
    """Where one piece of content came from.

    Attributes:
        source: A readable name: ``user``, ``tool:<name>``, ``mcp:<server>/<tool>``, or a
            URL for fetched content.
        kind: What sort of source it is (``web``, ``email``, ``file``, ``mcp``, ...).
        trust: ``trusted`` (your code), ``user`` (the user's request) or ``untrusted``.
        sensitivity: ``public``, ``internal`` or ``secret`` data.
        tool: The tool that produced it, if any.
        server: The MCP server (or other tool source) it came through, if any.
        url: The URL it was read from, if known.
        tool_call_id: The call that produced it, if any.
    """

    source: str
    kind: SourceKind
    trust: TrustLevel
    sensitivity: Sensitivity = "public"
    tool: str | None = None
    server: str | None = None
    url: str | None = None
    tool_call_id: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (the journal's)."""
        data: dict[str, Any] = {
            "source": self.source,
            "kind": self.kind,
            "trust": self.trust,
            "sensitivity": self.sensitivity,
        }
        for name in ("tool", "server", "url", "tool_call_id"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Provenance:
        """The provenance :meth:`to_dict` wrote."""
        return cls(
            source=str(data["source"]),
            kind=data["kind"],
            trust=data["trust"],
            sensitivity=data.get("sensitivity", "public"),
            tool=data.get("tool"),
            server=data.get("server"),
            url=data.get("url"),
            tool_call_id=data.get("tool_call_id"),
        )


@dataclass(kw_only=True, slots=True, frozen=True)
class ProvenanceRecord:
    """One piece of the run's content with its provenance (the text the model read)."""

    provenance: Provenance
    text: str


@dataclass(kw_only=True, slots=True, frozen=True)
class Violation:
    """A sink call that breaks the data-flow policy.

    Attributes:
        rule: ``trusted_argument``, ``untrusted_content``, ``secret_content``,
            ``trifecta``, ``plan_sink`` or ``plan_target``.
        tool: The sink.
        argument: The argument (a dotted path), or ``None`` for a rule on the whole call.
        message: What is wrong, for the model and the audit.
        sources: The sources of the offending data (``tool:read_inbox``, a URL, ...).
        action: ``refuse`` or ``approve`` (ask a human) when enforced.
        tool_call_id: The call.
        enforced: False in shadow mode (the call ran).
    """

    rule: str
    tool: str
    argument: str | None
    message: str
    sources: tuple[str, ...] = ()
    action: Literal["refuse", "approve"] = "refuse"
    tool_call_id: str | None = None
    enforced: bool = True


@dataclass(kw_only=True, eq=False)
class DataFlowLedger:
    """The run's provenance ledger (in ``RunState.dataflow``).

    Attributes:
        records: Every tool output and user message of the run, with provenance, in order.
        plan_sinks: In plan mode, the sinks the user's request allows (``None``: any).
        plan_targets: In plan mode, the targets (normalised entities) it allows.
        planned: True once the plan was fixed.
        secrets_used: Names of vault secrets resolved in the run.
        violations: Every policy violation found, enforced or not (the audit trail).
    """

    records: list[ProvenanceRecord] = field(default_factory=list[ProvenanceRecord])
    plan_sinks: list[str] | None = None
    plan_targets: list[str] = field(default_factory=list[str])
    planned: bool = False
    secrets_used: list[str] = field(default_factory=list[str])
    violations: list[Violation] = field(default_factory=list[Violation])

    def sources(self, trust: TrustLevel) -> list[Provenance]:
        """The provenance of every record of this trust, in order."""
        return [r.provenance for r in self.records if r.provenance.trust == trust]
