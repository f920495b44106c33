"""Records the stores hold, the errors they raise, and the JSON codec every backend shares.

Payloads are JSON objects: callers pass any mapping that ``json.dumps`` accepts, stores keep the
compact UTF-8 JSON text verbatim (never a re-ordered binary form such as JSONB), and reads give
back a fresh ``dict``. Artifacts hold text. Imported by every backend and by ``_protocols``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, TypeAlias, cast, get_args

from bastion.core import JsonObject, JsonValue, RunError, RunStatus, UserError

__all__ = [
    "ENTRY_KINDS",
    "Artifact",
    "CorruptRecord",
    "CounterResult",
    "EntryKind",
    "JournalConflict",
    "JournalEntry",
    "JournalUnreadable",
    "JsonObject",
    "JsonValue",
    "NewEntry",
    "RunPage",
    "RunRecord",
    "SessionEntry",
    "Sensitivity",
    "SessionInfo",
    "StoreError",
    "decode_object",
    "encode_object",
    "from_timestamp",
]

EntryKind: TypeAlias = Literal[
    "run_started",
    "model_response",
    "tool_call_started",
    "tool_result",
    "interrupt_raised",
    "interrupt_decided",
    "handoff",
    "compaction",
    "run_ended",
    "graph_started",
    "graph_node_finished",
    "graph_step",
    "graph_suspended",
    "graph_resumed",
    "graph_ended",
]
Sensitivity: TypeAlias = Literal["public", "internal", "secret"]
ENTRY_KINDS: tuple[EntryKind, ...] = get_args(EntryKind)
_SURROGATE = re.compile("[\ud800-\udfff]")


class StoreError(RunError):
    """A store could not do what was asked (the backend failed or refused)."""


class CorruptRecord(StoreError):
    """A stored row is not what a store writes (bad JSON, not an object, a bad header).

    Raised on read instead of the decoder's own error, so that callers see which record
    is damaged; nothing is changed in the store.

    Attributes:
        seq: The journal entry's seq, when the record is a journal entry.
    """

    def __init__(self, message: str, *, seq: int | None = None) -> None:
        self.seq = seq
        super().__init__(message)


class JournalUnreadable(StoreError):
    """A run's journal cannot be replayed safely, so nothing of the run is run.

    Raised by resume when an entry is damaged, of an unknown kind, misses a field, or was
    written by a newer Bastion (its ``schema_version`` is above the one this one reads).

    Attributes:
        run_id: The run.
        seq: The entry that could not be used.
    """

    def __init__(self, run_id: str, seq: int, problem: str) -> None:
        self.run_id = run_id
        self.seq = seq
        super().__init__(
            f"The journal of run {run_id!r} cannot be replayed: entry {seq} {problem} "
            "Nothing was run. Inspect it with 'bastion runs export "
            f"{run_id}'."
        )


class JournalConflict(StoreError):
    """Another writer appended to the run's journal first (optimistic concurrency).

    Attributes:
        run_id: The run both writers appended to.
        expected_seq: The last sequence number the losing writer had seen.
        actual_seq: The run's last sequence number when the append was refused.
    """

    def __init__(self, run_id: str, *, expected_seq: int, actual_seq: int) -> None:
        self.run_id = run_id
        self.expected_seq = expected_seq
        self.actual_seq = actual_seq
        super().__init__(
            f"Journal of run {run_id!r} is at seq {actual_seq}, but this writer expected "
            f"{expected_seq}: another writer appended first and nothing was written. Read the "
            f"entries after seq {expected_seq}, rebuild the state and append again with "
            f"expected_seq={actual_seq}."
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class NewEntry:
    """A journal entry to append; the store gives it the next sequence number.

    Attributes:
        kind: What happened.
        payload: A JSON object (anything ``json.dumps`` accepts, with string keys).
        schema_version: Version of the payload's format, so that old journals still load.
    """

    kind: EntryKind
    payload: Mapping[str, object] = field(default_factory=dict[str, object])
    schema_version: int = 1


@dataclass(frozen=True, kw_only=True, slots=True)
class JournalEntry:
    """A journal entry as stored.

    Attributes:
        seq: Position in the run's journal, from 1, without gaps.
        kind: What happened.
        payload: The JSON object that was appended.
        schema_version: Version of the payload's format.
        recorded_at: When the store accepted the entry (UTC).
    """

    seq: int
    kind: EntryKind
    payload: JsonObject
    schema_version: int
    recorded_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class RunRecord:
    """Metadata of one run's journal.

    Attributes:
        run_id: The run.
        agent: Name of the agent that started it.
        status: The status set by the last append that named one (``running`` at first).
        last_seq: Sequence number of the last entry.
        created_at: When the first entry was appended (UTC).
        updated_at: When the last entry was appended (UTC).
    """

    run_id: str
    agent: str
    status: RunStatus
    last_seq: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class RunPage:
    """One page of :meth:`JournalStore.list_runs`, newest run first.

    Attributes:
        runs: The runs on this page.
        next_offset: The ``offset`` of the next page, or ``None`` on the last page.
    """

    runs: list[RunRecord]
    next_offset: int | None


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionEntry:
    """One transcript entry of a session; ``parent_id`` links entries into a tree.

    Attributes:
        session_id: The session.
        entry_id: Unique within the session.
        parent_id: The entry this one follows, or ``None`` for a root.
        kind: What the entry is (for example ``message``), chosen by the caller.
        payload: A JSON object.
        position: Order of insertion within the session, from 1.
        created_at: When the store accepted the entry (UTC).
    """

    session_id: str
    entry_id: str
    parent_id: str | None
    kind: str
    payload: JsonObject
    position: int
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class SessionInfo:
    """Summary of one session for :meth:`SessionStore.list_sessions`, newest first.

    Attributes:
        session_id: The session.
        entry_count: Number of transcript entries.
        created_at: When the session was first written (UTC).
        updated_at: When an entry or the state was last written (UTC).
    """

    session_id: str
    entry_count: int
    created_at: datetime
    updated_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class Artifact:
    """A progress artifact: UTF-8 text a run leaves for itself or its successors.

    Attributes:
        artifact_id: Unique identifier.
        run_id: The run that wrote it.
        role: Who or what it is for (for example ``planner``), chosen by the caller.
        seq: The journal sequence number it relates to; ``read(since_seq=n)`` returns ``seq > n``.
        content: The text.
        sensitivity: Sensitivity tier (``public``, ``internal``, ``secret``), as for tools.
        tags: Free-form tags.
        created_at: When the store accepted it (UTC).
    """

    artifact_id: str
    run_id: str
    role: str
    seq: int
    content: str
    sensitivity: Sensitivity
    tags: tuple[str, ...]
    created_at: datetime


@dataclass(frozen=True, kw_only=True, slots=True)
class CounterResult:
    """Outcome of :meth:`CounterStore.try_add`.

    Attributes:
        accepted: Whether the amount was added (the result stayed within the maximum).
        value: The counter after the call: the new value if accepted, else the unchanged one.
    """

    accepted: bool
    value: float


def encode_object(payload: Mapping[str, object], what: str) -> str:
    """Return ``payload`` as compact JSON text; raise UserError if it is not a JSON object."""
    if not isinstance(payload, Mapping):
        raise UserError(f"{what} must be a mapping with string keys, got {type(payload).__name__}.")
    try:
        text = json.dumps(payload, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise UserError(
            f"{what} is not JSON-serialisable ({exc}); store only JSON values "
            "(str, int, float, bool, None, lists and dicts with string keys)."
        ) from exc
    if has_lone_surrogate(text):
        # A lone surrogate (a file name decoded with ``surrogateescape``, say) has no UTF-8
        # form, so no backend can store it raw. JSON's ``\udcXX`` escape keeps it exactly:
        # ``json.loads`` gives back the same Python string.
        text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


def has_lone_surrogate(text: str) -> bool:
    """Whether ``text`` holds a lone surrogate, which has no UTF-8 form."""
    return not text.isascii() and _SURROGATE.search(text) is not None


def decode_object(text: str | bytes) -> JsonObject:
    """Return the JSON object stored as ``text``.

    Raises:
        CorruptRecord: ``text`` is not a JSON object (a damaged or hand-edited row).
    """
    try:
        value: object = json.loads(text)
    except (ValueError, TypeError) as exc:  # JSONDecodeError, bad UTF-8, a NULL column
        raise CorruptRecord(f"A stored payload is not valid JSON ({exc}).") from exc
    if not isinstance(value, dict):
        raise CorruptRecord(f"A stored payload is {type(value).__name__}, not a JSON object.")
    return cast("JsonObject", value)


def from_timestamp(seconds: float) -> datetime:
    """Return a UTC datetime from seconds since the epoch."""
    return datetime.fromtimestamp(seconds, UTC)


def stored_entry(
    seq: int, kind: str, schema_version: int, payload: str | bytes, recorded_at: float
) -> JournalEntry:
    """A journal entry as a backend read or wrote it (``payload`` is the JSON text).

    Raises:
        CorruptRecord: The row is damaged (its payload or its header).
    """
    try:
        decoded = decode_object(payload)
        return JournalEntry(
            seq=int(seq),
            kind=cast("EntryKind", str(kind)),
            payload=decoded,
            schema_version=int(schema_version),
            recorded_at=from_timestamp(float(recorded_at)),
        )
    except (CorruptRecord, ValueError, TypeError, OverflowError, OSError) as exc:
        raise CorruptRecord(f"Journal entry {seq} ({kind!r}) is damaged: {exc}", seq=seq) from exc


MAX_SEQ = 2**63 - 1
"""The largest sequence number or offset a store keeps (a signed 64-bit integer)."""
