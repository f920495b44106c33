"""Governance: one policy gate for model calls, tool calls, sub-agents and user actions.

Oracles with hierarchical keys, two-phase policy resolution, limits in time windows,
mutable limits and interrupts, snapshot/restore of counters (SPEC §1.2 L ids,
ARCHITECTURE §4). See ``docs/governance.md``.
"""

import warnings
from typing import Any

from ._constraints import max_cycles, max_depth, max_loop
from ._counters import CounterView
from ._desk import InterruptContext, InterruptHandler, Substitute
from ._durable import (
    CounterRecord,
    DecidedInterrupt,
    GovernanceState,
    GovernorSnapshot,
    MutationRecord,
    SuspendedInterrupt,
    dump_governance_state,
    load_governance_state,
)
from ._governor import Governor
from ._interrupts import (
    ActionTimeout,
    BudgetUnpriced,
    Denied,
    DenyDecision,
    GovernanceError,
    Interrupt,
    InterruptDecision,
    InterruptRequired,
    MutateDecision,
    MutationRefused,
    PolicyExceeded,
    ResultDecision,
    RetryDecision,
    decision_from_dict,
)
from ._plan import key_ancestry
from ._policy import (
    Budget,
    CustomPolicy,
    Limit,
    Oracle,
    Policy,
    PolicyAction,
    PolicyResult,
    allow,
    deny,
    interrupt,
)
from ._scope import ActionScope
from ._signals import (
    DataListener,
    DeniedSignal,
    ExceededSignal,
    ExecInSignal,
    ExecOutSignal,
    GovernanceSignal,
    InterruptInSignal,
    InterruptOutSignal,
    MutationSignal,
    PolicySignal,
    SignalListener,
    signal_data,
)
from ._store import (
    AtomicLimitCounters,
    CounterRow,
    LimitCounters,
    MemoryLimitCounters,
    SharedLimitStore,
)
from ._windows import Window, WindowSpec, parse_window

__all__ = [
    "ActionScope",
    "ActionTimeout",
    "AtomicLimitCounters",
    "Budget",
    "BudgetUnpriced",
    "CounterRecord",
    "CounterRow",
    "CounterView",
    "CustomPolicy",
    "DataListener",
    "DecidedInterrupt",
    "Denied",
    "DeniedSignal",
    "DenyDecision",
    "ExceededSignal",
    "ExecInSignal",
    "ExecOutSignal",
    "GovernanceError",
    "GovernanceSignal",
    "GovernanceState",
    "Governor",
    "GovernorSnapshot",
    "Interrupt",
    "InterruptContext",
    "InterruptDecision",
    "InterruptHandler",
    "InterruptInSignal",
    "InterruptOutSignal",
    "InterruptRequired",
    "Limit",
    "LimitCounters",
    "MemoryLimitCounters",
    "MutateDecision",
    "MutationRecord",
    "MutationRefused",
    "MutationSignal",
    "Oracle",
    "Policy",
    "PolicyAction",
    "PolicyExceeded",
    "PolicyResult",
    "PolicySignal",
    "ResultDecision",
    "RetryDecision",
    "SharedLimitStore",
    "SignalListener",
    "Substitute",
    "SuspendedInterrupt",
    "Window",
    "WindowSpec",
    "allow",
    "decision_from_dict",
    "deny",
    "dump_governance_state",
    "interrupt",
    "key_ancestry",
    "load_governance_state",
    "max_cycles",
    "max_depth",
    "max_loop",
    "parse_window",
    "signal_data",
]

# Names before the governor's counter protocol was told apart from bastion.stores.CounterStore.
_RENAMED = {
    "AtomicCounterStore": "AtomicLimitCounters",
    "CounterStore": "LimitCounters",
    "MemoryCounterStore": "MemoryLimitCounters",
}


def __getattr__(name: str) -> Any:
    new = _RENAMED.get(name)
    if new is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    warnings.warn(
        f"bastion.governance.{name} is now {new}; the old name will be removed.",
        DeprecationWarning,
        stacklevel=2,
    )
    return globals()[new]
