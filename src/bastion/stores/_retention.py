"""Retention: delete old runs and sessions by age and by count.

Journals and sessions grow by one record per run or session; nothing is ever removed on its
own. :func:`prune_runs` and :func:`prune_sessions` choose what to delete from the stores'
own listings (newest first) and delete it with the backend's ``delete_runs`` /
``delete_sessions``, so storage stays linear in what is kept. A run that may still continue
(``running``, ``awaiting_approval``) is never pruned.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime

from bastion.core import RunStatus, UserError

from ._protocols import JournalStore, SessionStore
from ._types import RunRecord, SessionInfo

__all__ = ["RESUMABLE", "Pruned", "prune_runs", "prune_sessions"]

RESUMABLE: frozenset[RunStatus] = frozenset({"running", "awaiting_approval"})
"""Statuses of runs that may still continue: never pruned."""

_PAGE = 200


@dataclass(frozen=True, kw_only=True, slots=True)
class Pruned:
    """What a prune deleted (``deleted``) out of what it looked at (``examined``)."""

    deleted: int
    examined: int


def _check(before: datetime | None, keep_last: int | None) -> None:
    if before is None and keep_last is None:
        raise UserError("Give before= (a datetime), keep_last= (a count), or both.")
    if keep_last is not None and (isinstance(keep_last, bool) or keep_last < 0):
        raise UserError(f"keep_last must be a count of 0 or more, got {keep_last!r}.")
    if before is not None and before.tzinfo is None:
        raise UserError("before must be timezone-aware (e.g. datetime.now(UTC) - timedelta(...)).")


def _expired(rank: int, updated_at: datetime, before: datetime | None, keep: int | None) -> bool:
    """Past the newest ``keep``, or last written before ``before``."""
    return (keep is not None and rank >= keep) or (before is not None and updated_at < before)


async def prune_runs(
    journal: JournalStore,
    *,
    before: datetime | None = None,
    keep_last: int | None = None,
    agent: str | None = None,
    where: Callable[[RunRecord], bool] | None = None,
) -> Pruned:
    """Delete finished runs last written before ``before`` or beyond the newest ``keep_last``.

    Args:
        journal: The journal store.
        before: Delete runs whose last entry is older than this instant.
        keep_last: Keep the newest this many runs (of ``agent``, when given); delete the rest.
        agent: Only runs of this agent (the count is per agent then).
        where: Only runs this returns True for (e.g. a tenant's, looked up by run id).

    Raises:
        UserError: Neither ``before`` nor ``keep_last``, a negative count, a naive datetime.
    """
    _check(before, keep_last)
    doomed: list[str] = []
    rank = examined = 0
    offset: int | None = 0
    while offset is not None:
        page = await journal.list_runs(agent=agent, limit=_PAGE, offset=offset)
        for run in page.runs:
            examined += 1
            if where is not None and not where(run):
                continue
            if _expired(rank, run.updated_at, before, keep_last) and run.status not in RESUMABLE:
                doomed.append(run.run_id)
            rank += 1
        offset = page.next_offset
    deleted = await journal.delete_runs(doomed) if doomed else 0
    return Pruned(deleted=deleted, examined=examined)


async def prune_sessions(
    sessions: SessionStore,
    *,
    before: datetime | None = None,
    keep_last: int | None = None,
    where: Callable[[SessionInfo], bool] | None = None,
) -> Pruned:
    """Delete sessions last written before ``before`` or beyond the newest ``keep_last``.

    ``where`` limits the prune to the sessions it returns True for (a tenant's sessions, by
    an id prefix, say); the count then applies to those.

    Raises:
        UserError: Neither ``before`` nor ``keep_last``, a negative count, a naive datetime.
    """
    _check(before, keep_last)
    doomed: list[str] = []
    rank = examined = 0
    while True:
        page = await sessions.list_sessions(limit=_PAGE, offset=examined)
        for info in page:
            examined += 1
            if where is not None and not where(info):
                continue
            if _expired(rank, info.updated_at, before, keep_last):
                doomed.append(info.session_id)
            rank += 1
        if len(page) < _PAGE:
            break
    deleted = await sessions.delete_sessions(doomed) if doomed else 0
    return Pruned(deleted=deleted, examined=examined)
