"""In-memory backend (``memory://``): one process, nothing persisted; for tests and scripts.

Every operation runs without awaiting inside its critical section, so it is atomic with respect
to other tasks on the event loop.
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace

from bastion.core import RunStatus, UserError

from ._checks import (
    check_append,
    check_key,
    check_page,
    check_runs_query,
    check_session_entry,
    last_n,
    new_artifact,
)
from ._leases import MemoryLeaseStore
from ._ownership import SessionConflict
from ._protocols import Stores
from ._types import (
    Artifact,
    CounterResult,
    JournalConflict,
    JournalEntry,
    JsonObject,
    NewEntry,
    RunPage,
    RunRecord,
    Sensitivity,
    SessionEntry,
    SessionInfo,
    decode_object,
    encode_object,
    from_timestamp,
)

__all__ = ["MemoryStores"]


@dataclass(kw_only=True, slots=True)
class _Run:
    record: RunRecord
    entries: list[JournalEntry] = field(default_factory=list[JournalEntry])
    texts: list[str] = field(default_factory=list[str])  # payloads as JSON, decoded per read


class MemoryJournalStore:
    """Journals in a dict."""

    def __init__(self) -> None:
        self._runs: dict[str, _Run] = {}

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        """Append entries after ``expected_seq``; see :class:`JournalStore`."""
        checked = check_append(run_id, entries, expected_seq, status)
        run = self._runs.get(run_id)
        actual = run.record.last_seq if run is not None else 0
        if actual != expected_seq:
            raise JournalConflict(run_id, expected_seq=expected_seq, actual_seq=actual)
        now = from_timestamp(time.time())
        stored = [
            JournalEntry(
                seq=entry.seq,
                kind=entry.kind,
                # A copy through JSON: later mutation of the caller's dict cannot reach us.
                payload=decode_object(entry.text),
                schema_version=entry.schema_version,
                recorded_at=now,
            )
            for entry in checked
        ]
        if run is None:
            record = RunRecord(
                run_id=run_id,
                agent=agent,
                status=status or "running",
                last_seq=0,
                created_at=now,
                updated_at=now,
            )
            run = self._runs[run_id] = _Run(record=record)
        run.entries.extend(replace(entry, payload={}) for entry in stored)
        run.texts.extend(entry.text for entry in checked)
        run.record = replace(
            run.record,
            last_seq=stored[-1].seq,
            updated_at=now,
            status=status or run.record.status,
        )
        return stored

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        """Return entries after ``after_seq``."""
        run = self._runs.get(run_id)
        if run is None:
            return []
        start = max(after_seq, 0)
        return [
            replace(entry, payload=decode_object(text))
            for entry, text in zip(run.entries[start:], run.texts[start:], strict=True)
        ]

    async def last_seq(self, run_id: str) -> int:
        """Return the last seq (0 if none)."""
        run = self._runs.get(run_id)
        return run.record.last_seq if run is not None else 0

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run's metadata."""
        run = self._runs.get(run_id)
        return run.record if run is not None else None

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RunPage:
        """Return runs newest first."""
        check_runs_query(status, limit, offset)
        records = [
            run.record
            for run in self._runs.values()
            if (status is None or run.record.status == status)
            and (agent is None or run.record.agent == agent)
        ]
        records.sort(key=lambda r: (r.created_at, r.run_id), reverse=True)
        page = records[offset : offset + limit]
        more = offset + limit < len(records)
        return RunPage(runs=page, next_offset=offset + limit if more else None)

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete these runs; return how many existed."""
        return sum(self._runs.pop(run_id, None) is not None for run_id in set(run_ids))


@dataclass(kw_only=True, slots=True)
class _Session:
    info: SessionInfo
    entries: list[SessionEntry] = field(default_factory=list[SessionEntry])
    ids: set[str] = field(default_factory=set[str])
    state: str | None = None


class MemorySessionStore:
    """Session transcripts and state in a dict."""

    def __init__(self) -> None:
        self._sessions: dict[str, _Session] = {}

    def _session(self, session_id: str) -> _Session:
        session = self._sessions.get(session_id)
        if session is None:
            now = from_timestamp(time.time())
            info = SessionInfo(session_id=session_id, entry_count=0, created_at=now, updated_at=now)
            session = self._sessions[session_id] = _Session(info=info)
        return session

    async def append(
        self,
        session_id: str,
        *,
        kind: str,
        payload: Mapping[str, object],
        parent_id: str | None = None,
        entry_id: str | None = None,
        expect_head: bool = False,
    ) -> SessionEntry:
        """Append a transcript entry (compare-and-set on the head with ``expect_head``)."""
        text, entry_id = check_session_entry(session_id, kind, payload, entry_id)
        known = self._sessions.get(session_id)
        ids = known.ids if known is not None else set[str]()
        if parent_id is not None and parent_id not in ids:
            raise UserError(_no_parent(session_id, parent_id))
        if entry_id in ids:
            raise UserError(_taken(session_id, entry_id))
        if expect_head:
            head = known.entries[-1].entry_id if known is not None and known.entries else None
            if head != parent_id:
                raise SessionConflict(session_id, expected_head=parent_id, actual_head=head)
        session = self._session(session_id)
        now = from_timestamp(time.time())
        entry = SessionEntry(
            session_id=session_id,
            entry_id=entry_id,
            parent_id=parent_id,
            kind=kind,
            payload=decode_object(text),
            position=len(session.entries) + 1,
            created_at=now,
        )
        session.entries.append(entry)
        session.ids.add(entry_id)
        session.info = replace(session.info, entry_count=len(session.entries), updated_at=now)
        return replace(entry, payload=decode_object(text))

    async def entries(self, session_id: str) -> list[SessionEntry]:
        """Return the transcript in insertion order."""
        session = self._sessions.get(session_id)
        if session is None:
            return []
        return [
            replace(e, payload=decode_object(encode_object(e.payload, "payload")))
            for e in session.entries
        ]

    async def get_state(self, session_id: str) -> JsonObject | None:
        """Return the state object."""
        session = self._sessions.get(session_id)
        if session is None or session.state is None:
            return None
        return decode_object(session.state)

    async def put_state(self, session_id: str, state: Mapping[str, object]) -> None:
        """Replace the state object."""
        check_key(session_id, "session_id")
        text = encode_object(state, "Session state")
        session = self._session(session_id)
        session.state = text
        session.info = replace(session.info, updated_at=from_timestamp(time.time()))

    async def list_sessions(self, *, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Return sessions newest first."""
        check_page(limit, offset)
        infos = sorted(
            (s.info for s in self._sessions.values()),
            key=lambda i: (i.created_at, i.session_id),
            reverse=True,
        )
        return infos[offset : offset + limit]

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions; return how many existed."""
        return sum(self._sessions.pop(sid, None) is not None for sid in set(session_ids))


def _no_parent(session_id: str, parent_id: str) -> str:
    return (
        f"Session {session_id!r} has no entry {parent_id!r}; parent_id must name an entry "
        "of the same session, or be None for a root."
    )


def _taken(session_id: str, entry_id: str) -> str:
    return f"Session {session_id!r} already has an entry {entry_id!r}; entry ids are unique."


class MemoryArtifactStore:
    """Progress artifacts in a list."""

    def __init__(self) -> None:
        self._artifacts: list[Artifact] = []

    async def write(
        self,
        run_id: str,
        content: str,
        *,
        role: str,
        seq: int,
        sensitivity: Sensitivity = "internal",
        tags: Sequence[str] = (),
    ) -> Artifact:
        """Store one artifact."""
        artifact = new_artifact(run_id, content, role, seq, sensitivity, tags)
        self._artifacts.append(artifact)
        return artifact

    async def read(
        self,
        *,
        run_id: str | None = None,
        role: str | None = None,
        since_seq: int = 0,
        max_artifacts: int | None = None,
    ) -> list[Artifact]:
        """Return matching artifacts in the order written."""
        found = [
            a
            for a in self._artifacts
            if (run_id is None or a.run_id == run_id)
            and (role is None or a.role == role)
            and a.seq > since_seq
        ]
        return last_n(found, max_artifacts)


class MemoryCounterStore:
    """Counters in a dict."""

    def __init__(self) -> None:
        self._values: dict[tuple[str, int], float] = {}

    async def get(self, key: str, *, window_start: int = 0) -> float:
        """Return the value."""
        return self._values.get((key, window_start), 0.0)

    async def add(self, key: str, amount: float, *, window_start: int = 0) -> float:
        """Add unconditionally."""
        check_key(key, "Counter key")
        value = self._values.get((key, window_start), 0.0) + amount
        self._values[key, window_start] = value
        return value

    async def try_add(
        self, key: str, amount: float, *, maximum: float, window_start: int = 0
    ) -> CounterResult:
        """Add if the result stays within ``maximum``."""
        check_key(key, "Counter key")
        value = self._values.get((key, window_start), 0.0)
        if value + amount > maximum:
            return CounterResult(accepted=False, value=value)
        self._values[key, window_start] = value + amount
        return CounterResult(accepted=True, value=value + amount)

    async def reset(self, key: str, *, window_start: int | None = None) -> None:
        """Delete one window or all windows of ``key``."""
        for k in [k for k in self._values if k[0] == key]:
            if window_start is None or k[1] == window_start:
                del self._values[k]


class MemoryStores(Stores):
    """The four in-memory stores (``memory://``); each instance is independent."""

    def __init__(self) -> None:
        self.url = "memory://"
        self.journal = MemoryJournalStore()
        self.sessions = MemorySessionStore()
        self.artifacts = MemoryArtifactStore()
        self.counters = MemoryCounterStore()
        self.leases = MemoryLeaseStore()
