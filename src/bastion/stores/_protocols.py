"""The four store protocols and :class:`Stores`, the bundle a store URL opens.

Every backend (``_memory``, ``_sqlite``, ``_postgres``, ``_redis``) implements these, and
``bastion.testing.StoreConformance`` checks that they behave alike.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import TracebackType
from typing import Protocol, runtime_checkable

from bastion.core import RunStatus, UserError

from ._keeper import DEFAULT_LEASE_TTL
from ._ownership import LeaseStore
from ._types import (
    Artifact,
    CounterResult,
    JournalEntry,
    JsonObject,
    NewEntry,
    RunPage,
    RunRecord,
    Sensitivity,
    SessionEntry,
    SessionInfo,
)

__all__ = [
    "ArtifactStore",
    "CounterStore",
    "JournalStore",
    "SessionStore",
    "Stores",
    "branch",
]


@runtime_checkable
class JournalStore(Protocol):
    """Append-only journals of runs, with optimistic concurrency per run."""

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        """Append ``entries`` atomically after seq ``expected_seq``; return them as stored.

        ``expected_seq=0`` creates the run (named ``agent``, status ``running``). Entries get
        ``expected_seq + 1``, ``expected_seq + 2``, … All are written or none is.

        Args:
            run_id: The run.
            entries: At least one entry.
            expected_seq: The last seq the writer has seen (0 for a new run).
            agent: Name of the agent, recorded when the run is created.
            status: New run status, set in the same transaction.

        Raises:
            JournalConflict: The journal's last seq is not ``expected_seq``.
            UserError: Empty ``entries``, an unknown kind or status, a payload that is not JSON.
        """
        ...

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        """Return the entries with ``seq > after_seq`` in order (empty for an unknown run)."""
        ...

    async def last_seq(self, run_id: str) -> int:
        """Return the run's last sequence number, 0 if it has no entries."""
        ...

    async def get_run(self, run_id: str) -> RunRecord | None:
        """Return the run's metadata, or ``None`` if it has no journal."""
        ...

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RunPage:
        """Return runs, newest first (by creation time, then run id), filtered and paged."""
        ...

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """Delete these runs' journals and metadata; return how many runs existed.

        Unknown ids are skipped. Artifacts and counters are not touched.
        :func:`bastion.stores.prune_runs` chooses what to delete by age and count.
        """
        ...


@runtime_checkable
class SessionStore(Protocol):
    """Session transcripts (entries with parent ids) and per-session state."""

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
        """Append a transcript entry; a fresh ``entry_id`` is generated when not given.

        With ``expect_head`` the append is a compare-and-set on the session's head (its last
        entry): it is written only if ``parent_id`` is the head (``None``: the session has no
        entry yet), so writers sharing a session never fork its chain.

        Raises:
            SessionConflict: With ``expect_head``, the head is another entry (another writer
                appended first); nothing was written.
            UserError: ``parent_id`` names no entry of this session, ``entry_id`` is taken,
                or the payload is not a JSON object.
        """
        ...

    async def entries(self, session_id: str) -> list[SessionEntry]:
        """Return every entry of the session in insertion order (empty if unknown)."""
        ...

    async def get_state(self, session_id: str) -> JsonObject | None:
        """Return the session's state object, or ``None`` if none was put."""
        ...

    async def put_state(self, session_id: str, state: Mapping[str, object]) -> None:
        """Replace the session's state object."""
        ...

    async def list_sessions(self, *, limit: int = 50, offset: int = 0) -> list[SessionInfo]:
        """Return sessions, most recently created first."""
        ...

    async def delete_sessions(self, session_ids: Sequence[str]) -> int:
        """Delete these sessions' entries and state; return how many sessions existed.

        Unknown ids are skipped. :func:`bastion.stores.prune_sessions` chooses what to delete.
        """
        ...


@runtime_checkable
class ArtifactStore(Protocol):
    """Progress artifacts: text notes a run writes and later runs read."""

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
        """Store one artifact atomically (readers see all of it or nothing) and return it."""
        ...

    async def read(
        self,
        *,
        run_id: str | None = None,
        role: str | None = None,
        since_seq: int = 0,
        max_artifacts: int | None = None,
    ) -> list[Artifact]:
        """Return matching artifacts with ``seq > since_seq`` in the order written.

        With ``max_artifacts``, only the most recently written that many are returned.
        """
        ...


@runtime_checkable
class CounterStore(Protocol):
    """Numeric counters for governance limits, keyed by name and window start.

    Increments are atomic across every process sharing the store, and :meth:`try_add` is an
    atomic check-and-add: two processes spending against one budget cannot overspend it.
    """

    async def get(self, key: str, *, window_start: int = 0) -> float:
        """Return the counter's value (0 if never written)."""
        ...

    async def add(self, key: str, amount: float, *, window_start: int = 0) -> float:
        """Add ``amount`` unconditionally and return the new value."""
        ...

    async def try_add(
        self, key: str, amount: float, *, maximum: float, window_start: int = 0
    ) -> CounterResult:
        """Add ``amount`` only if the result stays ``<= maximum``, atomically."""
        ...

    async def reset(self, key: str, *, window_start: int | None = None) -> None:
        """Delete the counter for one window, or for every window when ``None``."""
        ...


class Stores:
    """The stores of one backend, opened by :func:`bastion.stores.open_store`.

    Use as an async context manager (``async with open_store(url) as stores``), or call
    :meth:`open` and :meth:`close` yourself.

    Attributes:
        url: The store URL, with any password removed.
        journal: Run journals.
        sessions: Session transcripts and state.
        artifacts: Progress artifacts.
        counters: Governance counters.
        leases: Owners of runs and session turns (leases with heartbeats).
        lease_ttl: Seconds the leases of runs and session turns on this store live without
            a heartbeat (default 30): how long a crashed owner keeps others waiting.
    """

    url: str
    journal: JournalStore
    sessions: SessionStore
    artifacts: ArtifactStore
    counters: CounterStore
    leases: LeaseStore
    lease_ttl: float = DEFAULT_LEASE_TTL

    async def open(self) -> None:
        """Connect and create or migrate the schema; idempotent."""

    async def close(self) -> None:
        """Release connections and threads; idempotent."""

    async def __aenter__(self) -> Stores:
        await self.open()
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.close()

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.url!r})"


def branch(entries: Sequence[SessionEntry], leaf_id: str) -> list[SessionEntry]:
    """Return the path from the root to ``leaf_id`` by following parent ids.

    Raises:
        UserError: ``leaf_id`` (or an ancestor) is not among ``entries``.
    """
    by_id = {entry.entry_id: entry for entry in entries}
    path: list[SessionEntry] = []
    current: str | None = leaf_id
    while current is not None:
        entry = by_id.get(current)
        if entry is None:
            raise UserError(f"No session entry {current!r} on the path to {leaf_id!r}.")
        path.append(entry)
        current = entry.parent_id
    path.reverse()
    return path
