"""Security: inbound sanitisation, provenance and the data-flow policy, the secrets vault.

* Inbound (layer L1 of the defence): the imperative-pattern catalogue and the form scan of
  untrusted tool output, the five inbound policies and their defaults per trust class, and
  the system-prompt preamble that explains the untrusted-data markers.
* Data flow: every tool output's :class:`Provenance`, the run's :class:`DataFlowLedger` and
  its incremental index, and the :class:`DataFlowPolicy` checked before each sink call.
* Secrets: the :class:`Vault`, :class:`SecretRef` and the redaction of revealed values and
  of secret-named keys.
"""

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

__all__ = [
    "ArgumentRule",
    "DEFAULT_TRUST",
    "DataFlowIndex",
    "DataFlowLedger",
    "DataFlowPolicy",
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
