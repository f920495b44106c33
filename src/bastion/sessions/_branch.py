"""Branches: a session that shares another's history up to one message.

A branch is stored as one entry, not a copy: its root is a ``branched`` entry naming the
source session, the source entry it grows from and how many of the source's messages it
keeps (``{"session", "entry", "count"}``). Reading a branch reads the source's chain up to
that entry first (branches of branches too; a cycle is refused, never followed), so the
source's later entries never show in the branch and the branch never writes to the source.
An export materialises the shared part: the ``branched`` root becomes a ``compacted``
entry holding those messages, so the export stands alone and re-exports byte-equal.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bastion.core import UserError
from bastion.stores import SessionEntry, SessionStore

__all__ = ["BRANCHED", "read_entries"]

BRANCHED = "branched"


async def read_entries(store: SessionStore, session_id: str) -> list[SessionEntry]:
    """The session's entries, a branch's shared history first (as if they were its own).

    Raises:
        UserError: The branches form a cycle, or a branch's source entry is gone.
    """
    return await _read(store, session_id, ())


async def _read(store: SessionStore, session_id: str, seen: Sequence[str]) -> list[SessionEntry]:
    own = await store.entries(session_id)
    if not own or own[0].kind != BRANCHED:
        return own
    root = own[0]
    source = str(root.payload.get("session", ""))
    entry = str(root.payload.get("entry", ""))
    if source in seen or source == session_id:
        chain = " -> ".join([*seen, session_id, source])
        raise UserError(f"Session branches form a cycle: {chain}.")
    shared = await _read(store, source, (*seen, session_id))
    path = _path(shared, entry, source)
    return [*path, dataclasses.replace(root, parent_id=entry), *own[1:]]


def _path(entries: Sequence[SessionEntry], leaf: str, session_id: str) -> list[SessionEntry]:
    """The entries from the root to ``leaf`` (a parent cycle is refused)."""
    by_id = {e.entry_id: e for e in entries}
    path: list[SessionEntry] = []
    current: str | None = leaf
    while current is not None:
        entry = by_id.get(current)
        if entry is None or len(path) > len(by_id):
            raise UserError(
                f"Session {session_id!r} has no chain to entry {leaf!r}: the branch's source "
                "was changed or its parent ids loop."
            )
        path.append(entry)
        current = entry.parent_id
    path.reverse()
    return path
