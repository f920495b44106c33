"""``SecurityConfig``: an agent's data-flow policy, secrets vault and protocol guard.

``Agent(security=SecurityConfig(dataflow=DataFlowPolicy(mode="enforce"), vault=Vault(...)))``.
:func:`label_output` gives a tool output its provenance under the policy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bastion.core import UserError

from ._policy import DataFlowPolicy
from ._protocol import ProtocolGuard
from ._provenance import Provenance, Sensitivity, SourceKind
from ._vault import Vault

__all__ = ["PROVENANCE", "SecurityConfig", "label_output"]

PROVENANCE = "bastion.provenance"
"""``ToolResult.metadata`` key: a tool may give its result's provenance details here
(``{"url": ..., "kind": "email", "sensitivity": "secret"}``); the executor puts the
resolved :class:`Provenance` under it."""

# Trust classes of tools whose output is untrusted, and the source kind it is.
_UNTRUSTED_KINDS: Mapping[str, SourceKind] = {
    "web_search": "web",
    "mcp_derived": "mcp",
    "skill_untrusted": "skill",
}


@dataclass(kw_only=True, slots=True, frozen=True)
class SecurityConfig:
    """An agent's security options.

    Attributes:
        dataflow: The data-flow policy checked before every sink call (``None``: none;
            then tool outputs carry no provenance and nothing is checked).
        vault: The secrets tools may reveal (``secrets_allowed`` per tool).
        protocol_guard: Escapes control characters (terminal sequences, bidirectional
            overrides, invisible tags, ...) in every tool output before the model reads
            it. ``True`` guards every class of the catalogue.
    """

    dataflow: DataFlowPolicy | None = None
    vault: Vault | None = None
    protocol_guard: ProtocolGuard | bool | None = None

    def __post_init__(self) -> None:
        if self.dataflow is not None and not isinstance(self.dataflow, DataFlowPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"SecurityConfig.dataflow must be a DataFlowPolicy, got {self.dataflow!r}."
            )
        if self.vault is not None and not isinstance(self.vault, Vault):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"SecurityConfig.vault must be a Vault, got {self.vault!r}.")
        guard = self.protocol_guard
        if guard is not None and not isinstance(guard, ProtocolGuard | bool):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                "SecurityConfig.protocol_guard must be a ProtocolGuard, True or None, "
                f"got {guard!r}."
            )

    @property
    def guard(self) -> ProtocolGuard | None:
        """The protocol guard in force (``True`` means every class), or ``None``."""
        guard = self.protocol_guard
        if guard is True:
            return ProtocolGuard()
        return guard or None


@dataclass(kw_only=True, slots=True, frozen=True)
class ToolFacts:
    """What labelling needs to know of a tool and of one of its results."""

    name: str
    trust_class: str
    sensitivity: Sensitivity
    source: str | None
    marked_untrusted: bool
    tool_call_id: str


def label_output(policy: DataFlowPolicy, facts: ToolFacts, given: Any) -> Provenance:
    """The provenance of one tool output.

    The kind comes from the policy's ``sources`` for the tool, else its trust class (web,
    MCP, untrusted skills), else ``file`` for first-party tools that mark their output
    untrusted (``bash``, the file tools), else ``tool``. ``given`` is what the tool put
    under :data:`PROVENANCE` (a URL, a kind, a sensitivity), if anything.
    """
    label = policy.label(facts.name)
    kind: SourceKind = (
        label.kind
        if label is not None
        else _UNTRUSTED_KINDS.get(facts.trust_class, "file" if facts.marked_untrusted else "tool")
    )
    details: Mapping[str, Any] = given if isinstance(given, Mapping) else {}  # pyright: ignore[reportUnknownVariableType]
    kind = details.get("kind", kind)
    sensitivity = details.get(
        "sensitivity", label.sensitivity if label and label.sensitivity else facts.sensitivity
    )
    trust = policy.trust_of(kind, label.trust if label is not None else None)
    if trust == "trusted" and facts.marked_untrusted and label is None:
        trust = "untrusted"
    if policy.declassifies(facts.name):
        trust, sensitivity = "trusted", "public"
    url = details.get("url")
    server = facts.source
    source = url or (f"mcp:{server}/{facts.name}" if server else f"tool:{facts.name}")
    return Provenance(
        source=str(source),
        kind=kind,
        trust=trust,
        sensitivity=sensitivity,
        tool=facts.name,
        server=server,
        url=None if url is None else str(url),
        tool_call_id=facts.tool_call_id,
    )
