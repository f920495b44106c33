"""A session as JSON lines: ``Session.export_jsonl`` / ``Session.import_jsonl`` call these.

A header ``{"format": "bastion-session/1", "session_id": ..., "state": {...}}``, then one
line per entry (``entry_id``, ``parent_id``, ``kind``, ``payload``); keys sorted, compact
separators, UTF-8 as is, so an export of an import is byte-equal.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, TypedDict, cast

from bastion.core import UserError
from bastion.stores import SessionStore

if TYPE_CHECKING:
    from bastion.core import JsonObject, JsonValue

__all__ = ["FORMAT", "ExportRow", "dump_session", "parse_export", "store_rows"]

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


class ExportRow(TypedDict):
    """One entry line of an export (what :func:`dump_session` writes after the header)."""

    entry_id: str
    parent_id: str | None
    kind: str
    payload: Mapping[str, JsonValue]


def parse_export(text: str) -> tuple[Mapping[str, JsonValue], list[ExportRow]]:
    """The header and the entry rows of an export.

    Raises:
        UserError: The text is not a session export.
    """
    try:
        rows: list[object] = [json.loads(line) for line in text.splitlines() if line.strip()]
    except ValueError as exc:
        raise UserError(f"Not a session export: invalid JSON line ({exc}).") from None
    first = rows[0] if rows else None
    header = cast("JsonObject", first) if isinstance(first, dict) else {}
    if header.get("format") != FORMAT:
        raise UserError(f"Not a session export: the first line must be a {FORMAT} header.")
    return header, [_row(row, number) for number, row in enumerate(rows[1:], start=2)]


def _row(row: object, number: int) -> ExportRow:
    """An entry line, checked.

    Raises:
        UserError: The line is not an entry (``entry_id``, ``parent_id``, ``kind``, ``payload``).
    """
    fields = cast("JsonObject", row) if isinstance(row, dict) else {}
    entry_id, parent_id = fields.get("entry_id"), fields.get("parent_id")
    kind, payload = fields.get("kind"), fields.get("payload")
    if not (
        isinstance(entry_id, str)
        and (parent_id is None or isinstance(parent_id, str))
        and isinstance(kind, str)
        and isinstance(payload, Mapping)
    ):
        raise UserError(f"Not a session export: line {number} is not an entry ({row!r:.200}).")
    return ExportRow(entry_id=entry_id, parent_id=parent_id, kind=kind, payload=payload)


async def store_rows(
    store: SessionStore,
    session_id: str,
    header: Mapping[str, JsonValue],
    rows: Sequence[ExportRow],
) -> None:
    """Store the entries and state of an export under ``session_id``.

    Raises:
        UserError: The store already holds session ``session_id``, or the header's
            ``state`` is not a JSON object.
    """
    if await store.entries(session_id) or await store.get_state(session_id) is not None:
        raise UserError(f"Session {session_id!r} already exists in the agent's store.")
    state = header.get("state")
    if not isinstance(state, Mapping):
        raise UserError(f"Not a session export: the header's state is {state!r}, not an object.")
    for row in rows:
        await store.append(
            session_id,
            kind=row["kind"],
            payload=row["payload"],
            parent_id=row["parent_id"],
            entry_id=row["entry_id"],
        )
    await store.put_state(session_id, state)


def _dump(value: object) -> str:
    text = json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode()
    except UnicodeEncodeError:  # a lone surrogate: JSON's \u escape keeps it exactly
        text = json.dumps(value, sort_keys=True, separators=(",", ":"))
    return text
