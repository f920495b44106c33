"""Records the stores hold, the errors they raise, and the JSON codec every backend shares.

Payloads are JSON objects: callers pass any mapping that ``json.dumps`` accepts, stores keep the
compact UTF-8 JSON text verbatim (never a re-ordered binary form such as JSONB), and reads give
back a fresh ``dict``. Artifacts hold text. Imported by every backend and by ``_protocols``.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Literal, TypeAlias, cast, get_args

from bastion.core import RunError, RunStatus, UserError, new_id

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

JsonValue: TypeAlias = "str | int | float | bool | list[JsonValue] | dict[str, JsonValue] | None"
JsonObject: TypeAlias = "dict[str, JsonValue]"

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
SENSITIVITIES: tuple[Sensitivity, ...] = get_args(Sensitivity)
ENTRY_KINDS: tuple[EntryKind, ...] = get_args(EntryKind)
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)
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
    if not text.isascii() and _SURROGATE.search(text) is not None:
        # A lone surrogate (a file name decoded with ``surrogateescape``, say) has no UTF-8
        # form, so no backend can store it raw. JSON's ``\udcXX`` escape keeps it exactly:
        # ``json.loads`` gives back the same Python string.
        text = json.dumps(payload, ensure_ascii=True, separators=(",", ":"), allow_nan=False)
    return text


def check_text(value: str, what: str) -> None:
    """Raise UserError if ``value`` has no UTF-8 form (it holds a lone surrogate)."""
    if not value.isascii() and _SURROGATE.search(value) is not None:
        raise UserError(
            f"{what} {value!r} is not valid Unicode text (it holds a lone surrogate, as "
            "os.fsdecode gives for bytes that are not UTF-8), so no store can keep it; "
            "decode it with errors='replace' or pass it inside a payload, which keeps it."
        )


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


def check_entries(entries: Sequence[NewEntry], expected_seq: int) -> list[str]:
    """Validate an append before any side effect; return the encoded payloads."""
    if expected_seq < 0:
        raise UserError(f"expected_seq must be >= 0, got {expected_seq!r}.")
    if not entries:
        raise UserError("append() needs at least one entry; got an empty sequence.")
    encoded: list[str] = []
    for entry in entries:
        if entry.kind not in ENTRY_KINDS:
            raise UserError(
                f"Unknown journal entry kind {entry.kind!r}. Valid kinds: "
                + ", ".join(repr(k) for k in ENTRY_KINDS)
                + "."
            )
        encoded.append(encode_object(entry.payload, f"Payload of {entry.kind!r} entry"))
    return encoded


def check_status(status: str | None) -> None:
    """Raise UserError if ``status`` is not a run status."""
    if status is not None and status not in RUN_STATUSES:
        raise UserError(
            f"Unknown run status {status!r}. Valid statuses: "
            + ", ".join(repr(s) for s in RUN_STATUSES)
            + "."
        )


MAX_SEQ = 2**63 - 1
"""The largest sequence number or offset a store keeps (a signed 64-bit integer)."""


def check_page(limit: int, offset: int) -> None:
    """Raise UserError on a bad page request."""
    if not 1 <= limit < MAX_SEQ or not 0 <= offset <= MAX_SEQ:
        raise UserError(
            f"Need 1 <= limit < {MAX_SEQ} and 0 <= offset <= {MAX_SEQ}, "
            f"got limit={limit!r}, offset={offset!r}."
        )


def seq_bound(since_seq: int) -> int:
    """``since_seq`` as a database can compare it: no stored seq is above ``MAX_SEQ``."""
    return min(since_seq, MAX_SEQ)


def check_artifact(run_id: str, role: str, sensitivity: str, tags: Sequence[str]) -> None:
    """Raise UserError on a bad artifact before it is written."""
    if not run_id or not role:
        raise UserError(f"An artifact needs a run_id and a role, got {run_id!r} and {role!r}.")
    if sensitivity not in SENSITIVITIES:
        raise UserError(
            f"Unknown sensitivity {sensitivity!r}. Valid: "
            + ", ".join(repr(s) for s in SENSITIVITIES)
            + "."
        )
    if isinstance(tags, str) or not all(isinstance(tag, str) for tag in tags):
        raise UserError(f"tags must be a sequence of strings, got {tags!r}.")
    check_text(role, "Artifact role")
    for tag in tags:
        check_text(tag, "Artifact tag")


def new_artifact(  # noqa: PLR0917 - mirrors ArtifactStore.write
    run_id: str,
    content: str,
    role: str,
    seq: int,
    sensitivity: Sensitivity,
    tags: Sequence[str],
) -> Artifact:
    """A checked, timestamped artifact ready to store (UserError on bad input)."""
    check_artifact(run_id, role, sensitivity, tags)
    check_text(run_id, "Artifact run_id")
    check_text(content, "Artifact content")
    return Artifact(
        artifact_id=new_id("artifact"),
        run_id=run_id,
        role=role,
        seq=seq,
        content=content,
        sensitivity=sensitivity,
        tags=tuple(tags),
        created_at=from_timestamp(time.time()),
    )


def check_session_entry(
    session_id: str, kind: str, payload: Mapping[str, object], entry_id: str | None
) -> tuple[str, str]:
    """Validate a session append before any side effect: (encoded payload, entry id)."""
    check_key(session_id, "session_id")
    check_key(kind, "kind")
    if entry_id is not None:
        check_key(entry_id, "entry_id")
    return encode_object(payload, "Session entry payload"), entry_id or new_id("entry")


def check_key(key: str, what: str) -> None:
    """Raise UserError on an empty identifier, or one no store can encode."""
    if not isinstance(key, str) or not key:
        raise UserError(f"{what} must be a non-empty string, got {key!r}.")
    check_text(key, what)
