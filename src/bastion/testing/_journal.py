"""``ForwardingJournal``: a journal store that passes every call on, for fault injection.

Subclass it and override the call to disturb (``append`` usually): fail an append, kill the
process around one, count what is written. Everything else reaches the real store.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.core import RunStatus
from bastion.stores import JournalEntry, JournalStore, NewEntry, RunPage, RunRecord

__all__ = ["ForwardingJournal"]


class ForwardingJournal:
    """A :class:`~bastion.stores.JournalStore` that forwards every call to ``inner``."""

    def __init__(self, inner: JournalStore) -> None:
        self.inner = inner

    async def append(
        self,
        run_id: str,
        entries: Sequence[NewEntry],
        *,
        expected_seq: int,
        agent: str = "",
        status: RunStatus | None = None,
    ) -> list[JournalEntry]:
        """Append through the inner store."""
        return await self.inner.append(
            run_id, entries, expected_seq=expected_seq, agent=agent, status=status
        )

    async def read(self, run_id: str, after_seq: int = 0) -> list[JournalEntry]:
        """Read through the inner store."""
        return await self.inner.read(run_id, after_seq)

    async def last_seq(self, run_id: str) -> int:
        """The inner store's last seq."""
        return await self.inner.last_seq(run_id)

    async def get_run(self, run_id: str) -> RunRecord | None:
        """The inner store's record of the run."""
        return await self.inner.get_run(run_id)

    async def list_runs(
        self,
        *,
        status: RunStatus | None = None,
        agent: str | None = None,
        limit: int = 50,
        offset: int = 0,
    ) -> RunPage:
        """The inner store's listing."""
        return await self.inner.list_runs(status=status, agent=agent, limit=limit, offset=offset)

    async def delete_runs(self, run_ids: Sequence[str]) -> int:
        """The inner store's deletion."""
        return await self.inner.delete_runs(run_ids)
