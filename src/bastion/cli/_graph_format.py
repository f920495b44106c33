"""One-line summaries of a graph execution's journal entries, for ``runs show`` and ``graph``.

Reads payloads as plain JSON (no graph import), so listing a store stays cheap.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ._format import preview
from ._json import JsonValue, as_list, as_object, as_objects

__all__ = ["graph_entry_summary", "pending_line"]


def _value(value: object, width: int = 48) -> str:
    return preview(json.dumps(value, ensure_ascii=False, default=str), width)


def pending_line(item: Mapping[str, object]) -> str:
    """One pending item of a suspended execution: its id, node and what it asks."""
    what = item.get("question") or item.get("reason") or item.get("kind", "")
    return f"{item.get('id', '')}  node {item.get('node', '')!s}: {preview(str(what), 72)}"


def graph_entry_summary(kind: str, payload: Mapping[str, JsonValue]) -> str:
    """One line about a graph entry (empty for a kind that is not a graph entry)."""
    match kind:
        case "graph_started":
            origin = as_object(payload.get("forked_from"))
            text = f"{payload.get('graph', '')} input={_value(payload.get('input'))}"
            if origin:
                text += f" forked from {origin.get('execution_id')}@{origin.get('version')}"
            return text
        case "graph_node_finished":
            return f"{payload.get('key', '')} → {_value(payload.get('output'))}"
        case "graph_step":
            finished = [str(key) for key in as_list(payload.get("finished"))]
            return f"step {payload.get('step', '')}: {', '.join(finished) or '(nothing new)'}"
        case "graph_suspended":
            pending = as_objects(payload.get("pending"))
            return "waiting for: " + ", ".join(str(p.get("id", "")) for p in pending)
        case "graph_resumed":
            directive = payload.get("directive")
            return "resumed" + (f" with {_value(directive, 60)}" if directive else "")
        case "graph_ended":
            status = str(payload.get("status", ""))
            if payload.get("error"):
                return f"{status}: {preview(str(payload['error']), 60)}"
            return f"{status} output={_value(payload.get('output'))}"
        case _:
            return ""
