"""Durable stores behind small async protocols: run journals, sessions, artifacts, counters.

``open_store(url)`` picks a backend: ``memory://``, ``sqlite:///path`` (the embedded default),
``postgresql://…`` (psycopg 3, pooled) or ``redis://…``. Every backend passes
``bastion.testing.StoreConformance``. See ``docs/stores.md``.
"""

from ._governance_counters import StoreCounters
from ._keeper import (
    DEFAULT_LEASE_TTL,
    LeaseKeeper,
    new_owner,
    run_lease_key,
    session_lease_key,
)
from ._open import DEFAULT_STORE_URL, STORE_ENV, open_store
from ._ownership import Lease, LeaseHeld, LeaseLost, LeaseStore, RunBusy, SessionConflict
from ._protocols import ArtifactStore, CounterStore, JournalStore, SessionStore, Stores, branch
from ._retention import RESUMABLE, Pruned, prune_runs, prune_sessions
from ._types import (
    ENTRY_KINDS,
    Artifact,
    CorruptRecord,
    CounterResult,
    EntryKind,
    JournalConflict,
    JournalEntry,
    JournalUnreadable,
    JsonObject,
    JsonValue,
    NewEntry,
    RunPage,
    RunRecord,
    Sensitivity,
    SessionEntry,
    SessionInfo,
    StoreError,
)

__all__ = [
    "Artifact",
    "ArtifactStore",
    "CorruptRecord",
    "CounterResult",
    "CounterStore",
    "DEFAULT_LEASE_TTL",
    "DEFAULT_STORE_URL",
    "ENTRY_KINDS",
    "EntryKind",
    "JournalConflict",
    "JournalEntry",
    "JournalStore",
    "JournalUnreadable",
    "JsonObject",
    "JsonValue",
    "Lease",
    "LeaseHeld",
    "LeaseKeeper",
    "LeaseLost",
    "LeaseStore",
    "NewEntry",
    "Pruned",
    "RESUMABLE",
    "RunBusy",
    "RunPage",
    "RunRecord",
    "STORE_ENV",
    "Sensitivity",
    "SessionConflict",
    "SessionEntry",
    "SessionInfo",
    "SessionStore",
    "StoreCounters",
    "StoreError",
    "Stores",
    "branch",
    "new_owner",
    "open_store",
    "prune_runs",
    "prune_sessions",
    "run_lease_key",
    "session_lease_key",
]
