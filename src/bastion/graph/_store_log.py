"""``ExecutionLog``: appends one graph execution's checkpoint entries to a run journal.

Owned by :class:`~bastion.graph.StoreCheckpointer`, one per execution it writes. A graph
execution is a run in ``stores.journal`` (its ``agent`` column holds ``graph:<name>``); its
entries are ``graph_started``, ``graph_node_finished``, ``graph_step``, ``graph_suspended``,
``graph_resumed`` and ``graph_ended``.

When entries reach the store: a *barrier* entry (:meth:`ExecutionLog.write`) is committed
before the call returns, together with everything queued before it; a *queued* entry
(:meth:`ExecutionLog.queue`) waits for the next barrier. A node's result is a barrier (a
node whose body returned is never run again), a step's checkpoint is queued (it rides in
the same commit as the next node's result, so a chain pays one commit per step; if it is
lost to a crash, resume derives it again from the node results that are durable). Writers
racing for one execution are refused by the journal's optimistic concurrency
(``expected_seq``): the loser gets :class:`CheckpointConflict` and writes nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping
from typing import TYPE_CHECKING

from bastion.stores import JournalConflict, NewEntry, StoreError

if TYPE_CHECKING:
    from bastion.core import RunStatus
    from bastion.stores import EntryKind, Stores

__all__ = ["GRAPH_SCHEMA_VERSION", "CheckpointConflict", "ExecutionLog", "graph_agent"]

GRAPH_SCHEMA_VERSION = 1
"""The ``schema_version`` of the graph entries this Bastion writes."""


def graph_agent(name: str) -> str:
    """The ``agent`` column of a graph execution's run: ``graph:<name>``."""
    return f"graph:{name}"


class CheckpointConflict(StoreError):
    """Another process wrote the execution's checkpoint first (a racing resume).

    Attributes:
        execution_id: The execution both writers wrote to.
        expected_version: The checkpoint version this writer had read.
        actual_version: The execution's version when the write was refused.
    """

    code = "checkpoint_version_conflict"

    def __init__(self, execution_id: str, *, expected_version: int, actual_version: int) -> None:
        self.execution_id = execution_id
        self.expected_version = expected_version
        self.actual_version = actual_version
        super().__init__(
            f"checkpoint-version-conflict: execution {execution_id!r} is at checkpoint version "
            f"{actual_version}, but this process read version {expected_version}: another "
            "process resumed or wrote it first, and nothing was written here. Load it again "
            "(graph.resume) if it still needs work."
        )


class ExecutionLog:
    """Appends one execution's entries with group commit and optimistic concurrency.

    Args:
        stores: An opened store.
        execution_id: The execution (its run id in the journal).
        graph: The graph's name (the run's ``agent`` column is ``graph:<name>``).
        version: The journal's last seq this writer has seen (0: a new execution).
    """

    __slots__ = (
        "_agent",
        "_failure",
        "_lock",
        "_queue",
        "_status",
        "execution_id",
        "stores",
        "version",
    )

    def __init__(self, stores: Stores, execution_id: str, graph: str, version: int = 0) -> None:
        self.stores = stores
        self.execution_id = execution_id
        self._agent = graph_agent(graph)
        self.version = version  # the last seq known to be in the store
        self._queue: list[NewEntry] = []
        self._status: RunStatus | None = None
        self._lock = asyncio.Lock()
        self._failure: Exception | None = None

    def queue(self, kind: EntryKind, payload: Mapping[str, object]) -> None:
        """Queue an entry; it is committed with the next :meth:`write` or :meth:`flush`."""
        self._check()
        self._queue.append(
            NewEntry(kind=kind, payload=payload, schema_version=GRAPH_SCHEMA_VERSION)
        )

    async def write(
        self, kind: EntryKind, payload: Mapping[str, object], status: RunStatus | None = None
    ) -> None:
        """Append an entry (and everything queued before it); return once it is durable.

        Raises:
            CheckpointConflict: Another writer appended to the execution first.
            StoreError: The store failed; nothing more is written by this log.
        """
        self.queue(kind, payload)
        if status is not None:
            self._status = status
        await self.flush()

    async def flush(self) -> None:
        """Commit whatever is queued (one append); concurrent callers share commits."""
        async with self._lock:
            self._check()
            if not self._queue:
                return
            entries, self._queue = self._queue, []
            status, self._status = self._status, None
            try:
                await self.stores.journal.append(
                    self.execution_id,
                    entries,
                    expected_seq=self.version,
                    agent=self._agent,
                    status=status,
                )
            except JournalConflict as exc:
                self._failure = CheckpointConflict(
                    self.execution_id,
                    expected_version=exc.expected_seq,
                    actual_version=exc.actual_seq,
                )
                raise self._failure from None
            except Exception as exc:
                self._failure = exc
                raise
            self.version += len(entries)

    def _check(self) -> None:
        if self._failure is not None:
            raise self._failure
