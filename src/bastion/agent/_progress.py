"""``agent.progress``: progress artifacts (notes runs leave for later runs) in the agent's store.

A long task leaves notes for whoever continues it — a later run, another process, a human:
what was done, what is next. Each note is an :class:`~bastion.stores.Artifact` written
atomically to the agent's store (``stores.artifacts``), or to an in-memory store private to
the agent when it has none.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import TYPE_CHECKING

from bastion import stores as store_package

if TYPE_CHECKING:
    from bastion.stores import Artifact, Sensitivity, Stores

__all__ = ["Progress"]


class Progress:
    """Write and read an agent's progress artifacts (``agent.progress``)."""

    def __init__(self, stores: Callable[[], Awaitable[Stores]], agent_name: str) -> None:
        self._stores = stores
        self.default_run_id = f"agent:{agent_name}"
        """Where notes of no run go: ``agent:<name>``."""

    async def write(
        self,
        content: str,
        *,
        role: str,
        seq: int | None = None,
        run_id: str | None = None,
        sensitivity: Sensitivity = "internal",
        tags: Sequence[str] = (),
    ) -> Artifact:
        """Store one artifact atomically and return it.

        Args:
            content: The note's text.
            role: Who writes it, e.g. ``"planner"`` or ``"coder"``; readers filter on it.
            seq: Its position; readers ask for artifacts after a seq. Default: one more than
                the run's last artifact (give it explicitly when several writers share a run).
            run_id: The run it belongs to (``ctx.run_id``); default ``agent:<name>``, the
                agent's notes across runs.
            sensitivity: ``public``, ``internal`` or ``secret``, as for tools.
            tags: Free-form labels.
        """
        stores = await self._stores()
        run_id = run_id or self.default_run_id
        if seq is None:
            last = await stores.artifacts.read(run_id=run_id, max_artifacts=1)
            seq = last[-1].seq + 1 if last else 1
        return await stores.artifacts.write(
            run_id, content, role=role, seq=seq, sensitivity=sensitivity, tags=tags
        )

    async def read(
        self,
        *,
        run_id: str | None = None,
        role: str | None = None,
        since_seq: int = 0,
        max_artifacts: int | None = None,
    ) -> list[Artifact]:
        """Return the artifacts with ``seq > since_seq``, in the order they were written.

        Args:
            run_id: Only this run's (``None``: every run's).
            role: Only this role's.
            since_seq: Only those after this seq.
            max_artifacts: Only the most recent that many.
        """
        stores = await self._stores()
        return await stores.artifacts.read(
            run_id=run_id, role=role, since_seq=since_seq, max_artifacts=max_artifacts
        )


def memory_stores() -> Stores:
    """A fresh in-memory store, for an agent that has none."""
    return store_package.open_store("memory://")
