"""A session as JSON lines: ``Session.export_jsonl`` / ``Session.import_jsonl`` call these.

A header ``{"format": "bastion-session/1", "session_id": ..., "state": {...}}``, then one
line per entry (``entry_id``, ``parent_id``, ``kind``, ``payload``); keys sorted, compact
separators, UTF-8 as is, so an export of an import is byte-equal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, cast

from bastion.core import UserError
from bastion.stores import SessionStore

__all__ = ["FORMAT", "dump_session", "parse_export", "store_rows"]

FORMAT = "bastion-session/1"


async def dump_session(
    store: SessionStore, session_id: str, root: Mapping[str, object] | None = None
) -> str:
    """The stored session as JSON lines.

    ``root``: the payload of a ``compacted`` entry written in place of the first entry
    (a branch's ``branched`` root, materialised so that the export stands alone).
    """
    state = await store.get_state(session_id)
    lines = [_dump({"format": FORMAT, "session_id": session_id, "state": state or {}})]
    for index, e in enumerate(await store.entries(session_id)):
        row: dict[str, object] = {
            "entry_id": e.entry_id,
            "parent_id": e.parent_id,
            "kind": e.kind,
            "payload": e.payload,
        }
        if index == 0 and root is not None:
            row.update(parent_id=None, kind="compacted", payload=dict(root))
        lines.append(_dump(row))
    return "".join(line + "\n" for line in lines)


def parse_export(text: str) -> tuple[dict[str, Any], list[Any]]:
    """The header and the entry rows of an export.

    Raises:
        UserError: The text is not a session export.
    """
    try:
        rows: list[Any] = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise UserError(f"Not a session export: invalid JSON line ({exc}).") from None
    first: object = rows[0] if rows else None
    header = cast("dict[str, Any]", first) if isinstance(first, dict) else {}
    if header.get("format") != FORMAT:
        raise UserError(f"Not a session export: the first line must be a {FORMAT} header.")
    return header, rows[1:]


async def store_rows(
    store: SessionStore, session_id: str, header: dict[str, Any], rows: list[Any]
) -> None:
    """Store the entries and state of an export under ``session_id``.

    Raises:
        UserError: The store already holds session ``session_id``.
    """
    if await store.entries(session_id) or await store.get_state(session_id) is not None:
        raise UserError(f"Session {session_id!r} already exists in the agent's store.")
    for row in rows:
        await store.append(
            session_id,
            kind=row["kind"],
            payload=row["payload"],
            parent_id=row["parent_id"],
            entry_id=row["entry_id"],
        )
    await store.put_state(session_id, header["state"])


def _dump(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: JSON's \u escape keeps it exactly
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text
