"""Security: inbound sanitisation, provenance and the data-flow policy, the secrets vault.

* Inbound (layer L1 of the defence): the imperative-pattern catalogue and the form scan of
  untrusted tool output, the five inbound policies and their defaults per trust class, and
  the system-prompt preamble that explains the untrusted-data markers.
* Data flow: every tool output's :class:`Provenance`, the run's :class:`DataFlowLedger` and
  its incremental index, and the :class:`DataFlowPolicy` checked before each sink call.
* Protocol boundaries: the :class:`ProtocolGuard`, which escapes control characters
  (terminal sequences, bidirectional overrides, invisible tags) in tool output.
* Secrets: the :class:`Vault`, :class:`SecretRef` and the redaction of revealed values and
  of secret-named keys.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._config import PROVENANCE, SecurityConfig, ToolFacts, label_output
    from ._decode import scan_view
    from ._entities import allow_keys, extract_entities
    from ._form import FormHit, find_form_hits
    from ._inbound import (
        INBOUND_POLICIES,
        INBOUND_PREAMBLE,
        STRIP_MARKER,
        TRUST_CLASS_DEFAULTS,
        UNTRUSTED_BEGIN,
        UNTRUSTED_END,
        InboundHit,
        InboundPolicy,
        InboundScan,
        default_inbound_policy,
        find_injections,
        flag_line,
        sanitize_inbound,
        wrap_untrusted,
    )
    from ._index import DataFlowIndex, ValueTrace, index_of
    from ._patterns import InjectionCategory, InjectionPattern, catalogue
    from ._policy import (
        TARGET_WORDS,
        ArgumentRule,
        DataFlowPolicy,
        Plan,
        Planner,
        SinkCheck,
        Source,
        evaluate,
        from_user,
        no_secret,
        no_untrusted,
        plan_targets,
    )
    from ._protocol import CONTROL_ESCAPES, Escaped, ProtocolGuard
    from ._provenance import (
        DEFAULT_TRUST,
        DataFlowLedger,
        Provenance,
        ProvenanceRecord,
        Sensitivity,
        SourceKind,
        TrustLevel,
        Violation,
    )
    from ._redact import REDACTED, is_secret_key, redact_secret_keys
    from ._vault import (
        SecretAccessError,
        SecretInheritance,
        SecretRef,
        SecretScope,
        SecretSource,
        Vault,
        callable_secret,
        env_secret,
        file_secret,
    )

_LAZY = {
    "PROVENANCE": "._config",
    "SecurityConfig": "._config",
    "ToolFacts": "._config",
    "label_output": "._config",
    "scan_view": "._decode",
    "allow_keys": "._entities",
    "extract_entities": "._entities",
    "FormHit": "._form",
    "find_form_hits": "._form",
    "INBOUND_POLICIES": "._inbound",
    "INBOUND_PREAMBLE": "._inbound",
    "STRIP_MARKER": "._inbound",
    "TRUST_CLASS_DEFAULTS": "._inbound",
    "UNTRUSTED_BEGIN": "._inbound",
    "UNTRUSTED_END": "._inbound",
    "InboundHit": "._inbound",
    "InboundPolicy": "._inbound",
    "InboundScan": "._inbound",
    "default_inbound_policy": "._inbound",
    "find_injections": "._inbound",
    "flag_line": "._inbound",
    "sanitize_inbound": "._inbound",
    "wrap_untrusted": "._inbound",
    "DataFlowIndex": "._index",
    "ValueTrace": "._index",
    "index_of": "._index",
    "InjectionCategory": "._patterns",
    "InjectionPattern": "._patterns",
    "catalogue": "._patterns",
    "CONTROL_ESCAPES": "._protocol",
    "Escaped": "._protocol",
    "ProtocolGuard": "._protocol",
    "TARGET_WORDS": "._policy",
    "ArgumentRule": "._policy",
    "DataFlowPolicy": "._policy",
    "Plan": "._policy",
    "Planner": "._policy",
    "SinkCheck": "._policy",
    "Source": "._policy",
    "evaluate": "._policy",
    "from_user": "._policy",
    "no_secret": "._policy",
    "no_untrusted": "._policy",
    "plan_targets": "._policy",
    "DEFAULT_TRUST": "._provenance",
    "DataFlowLedger": "._provenance",
    "Provenance": "._provenance",
    "ProvenanceRecord": "._provenance",
    "Sensitivity": "._provenance",
    "SourceKind": "._provenance",
    "TrustLevel": "._provenance",
    "Violation": "._provenance",
    "REDACTED": "._redact",
    "is_secret_key": "._redact",
    "redact_secret_keys": "._redact",
    "SecretAccessError": "._vault",
    "SecretInheritance": "._vault",
    "SecretRef": "._vault",
    "SecretScope": "._vault",
    "SecretSource": "._vault",
    "Vault": "._vault",
    "callable_secret": "._vault",
    "env_secret": "._vault",
    "file_secret": "._vault",
}

__all__ = [
    "ArgumentRule",
    "CONTROL_ESCAPES",
    "DEFAULT_TRUST",
    "DataFlowIndex",
    "DataFlowLedger",
    "DataFlowPolicy",
    "Escaped",
    "FormHit",
    "INBOUND_POLICIES",
    "INBOUND_PREAMBLE",
    "InboundHit",
    "InboundPolicy",
    "InboundScan",
    "InjectionCategory",
    "InjectionPattern",
    "PROVENANCE",
    "Plan",
    "Planner",
    "ProtocolGuard",
    "Provenance",
    "ProvenanceRecord",
    "REDACTED",
    "STRIP_MARKER",
    "SecretAccessError",
    "SecretInheritance",
    "SecretRef",
    "SecretScope",
    "SecretSource",
    "SecurityConfig",
    "Sensitivity",
    "SinkCheck",
    "Source",
    "SourceKind",
    "TARGET_WORDS",
    "TRUST_CLASS_DEFAULTS",
    "ToolFacts",
    "TrustLevel",
    "UNTRUSTED_BEGIN",
    "UNTRUSTED_END",
    "ValueTrace",
    "Vault",
    "Violation",
    "allow_keys",
    "callable_secret",
    "catalogue",
    "default_inbound_policy",
    "env_secret",
    "evaluate",
    "extract_entities",
    "file_secret",
    "find_form_hits",
    "find_injections",
    "flag_line",
    "from_user",
    "index_of",
    "is_secret_key",
    "label_output",
    "no_secret",
    "no_untrusted",
    "plan_targets",
    "redact_secret_keys",
    "sanitize_inbound",
    "scan_view",
    "wrap_untrusted",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
