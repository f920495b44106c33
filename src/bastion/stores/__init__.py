"""Durable stores behind small async protocols: run journals, sessions, artifacts, counters.

``open_store(url)`` picks a backend: ``memory://``, ``sqlite:///path`` (the embedded default),
``postgresql://…`` (psycopg 3, pooled) or ``redis://…``. Every backend passes
``bastion.testing.StoreConformance``. See ``docs/stores.md``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
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
        MAX_SEQ,
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

_LAZY = {
    "RESUMABLE": "._retention",
    "Pruned": "._retention",
    "prune_runs": "._retention",
    "prune_sessions": "._retention",
    "StoreCounters": "._governance_counters",
    "DEFAULT_LEASE_TTL": "._keeper",
    "LeaseKeeper": "._keeper",
    "new_owner": "._keeper",
    "run_lease_key": "._keeper",
    "session_lease_key": "._keeper",
    "DEFAULT_STORE_URL": "._open",
    "STORE_ENV": "._open",
    "open_store": "._open",
    "Lease": "._ownership",
    "LeaseHeld": "._ownership",
    "LeaseLost": "._ownership",
    "LeaseStore": "._ownership",
    "RunBusy": "._ownership",
    "SessionConflict": "._ownership",
    "ArtifactStore": "._protocols",
    "CounterStore": "._protocols",
    "JournalStore": "._protocols",
    "SessionStore": "._protocols",
    "Stores": "._protocols",
    "branch": "._protocols",
    "ENTRY_KINDS": "._types",
    "Artifact": "._types",
    "CorruptRecord": "._types",
    "CounterResult": "._types",
    "EntryKind": "._types",
    "JournalConflict": "._types",
    "MAX_SEQ": "._types",
    "JournalEntry": "._types",
    "JournalUnreadable": "._types",
    "JsonObject": "._types",
    "JsonValue": "._types",
    "NewEntry": "._types",
    "RunPage": "._types",
    "RunRecord": "._types",
    "Sensitivity": "._types",
    "SessionEntry": "._types",
    "SessionInfo": "._types",
    "StoreError": "._types",
}

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
    "MAX_SEQ",
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


__getattr__ = lazy_attributes(__name__, _LAZY)
