"""The checks every store runs on its input before any side effect, in one place.

Each backend (``_memory``, ``_sqlite``, ``_postgres``, ``_redis``) calls these first, so that
a bad call fails alike, with the same message, on every backend and touches nothing.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import get_args

from bastion.core import RunStatus, UserError, new_id

from ._types import (
    ENTRY_KINDS,
    MAX_SEQ,
    Artifact,
    EntryKind,
    NewEntry,
    Sensitivity,
    encode_object,
    from_timestamp,
    has_lone_surrogate,
)

__all__ = [
    "EncodedEntry",
    "check_append",
    "check_artifact",
    "check_key",
    "check_max_artifacts",
    "check_page",
    "check_runs_query",
    "check_session_entry",
    "check_status",
    "check_text",
    "last_n",
    "new_artifact",
    "seq_bound",
]

SENSITIVITIES: tuple[Sensitivity, ...] = get_args(Sensitivity)
RUN_STATUSES: tuple[RunStatus, ...] = get_args(RunStatus)


@dataclass(frozen=True, slots=True)
class EncodedEntry:
    """A checked journal entry with its sequence number and its payload as JSON text.

    Attributes:
        seq: The sequence number it gets if the append is accepted.
        kind: What happened.
        schema_version: Version of the payload's format.
        text: The payload as compact JSON text, as stores keep it.
    """

    seq: int
    kind: EntryKind
    schema_version: int
    text: str


def check_append(
    run_id: str, entries: Sequence[NewEntry], expected_seq: int, status: str | None
) -> list[EncodedEntry]:
    """Validate a journal append before any side effect; return the entries to write.

    Raises:
        UserError: A bad run id, ``expected_seq``, entry kind, payload or status.
    """
    check_key(run_id, "run_id")
    encoded = _check_entries(entries, expected_seq)
    check_status(status)
    return [
        EncodedEntry(
            seq=expected_seq + i, kind=entry.kind, schema_version=entry.schema_version, text=text
        )
        for i, (entry, text) in enumerate(zip(entries, encoded, strict=True), start=1)
    ]


def check_runs_query(status: str | None, limit: int, offset: int) -> None:
    """Raise UserError on a bad :meth:`JournalStore.list_runs` request."""
    check_status(status)
    check_page(limit, offset)


def check_text(value: str, what: str) -> None:
    """Raise UserError if ``value`` has no UTF-8 form (it holds a lone surrogate)."""
    if has_lone_surrogate(value):
        raise UserError(
            f"{what} {value!r} is not valid Unicode text (it holds a lone surrogate, as "
            "os.fsdecode gives for bytes that are not UTF-8), so no store can keep it; "
            "decode it with errors='replace' or pass it inside a payload, which keeps it."
        )


def _check_entries(entries: Sequence[NewEntry], expected_seq: int) -> list[str]:
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


def check_max_artifacts(max_artifacts: int | None) -> None:
    """Raise UserError if ``max_artifacts`` is negative (``None`` means all)."""
    if max_artifacts is not None and max_artifacts < 0:
        raise UserError(f"max_artifacts must be >= 0 or None, got {max_artifacts!r}.")


def last_n(items: list[Artifact], max_artifacts: int | None) -> list[Artifact]:
    """Return the last ``max_artifacts`` items (all when ``None``)."""
    check_max_artifacts(max_artifacts)
    if max_artifacts is None:
        return items
    return items[len(items) - max_artifacts :] if max_artifacts else []
