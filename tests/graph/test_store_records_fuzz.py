"""The journal fold refuses what it cannot read with a typed error, never another exception."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any, cast

from hypothesis import example, given, settings
from hypothesis import strategies as st

from bastion.core import UserError
from bastion.graph import ExecutionRecord
from bastion.graph._store_records import fold_execution
from bastion.stores import JournalEntry, JournalUnreadable

KINDS = (
    "graph_started",
    "graph_node_finished",
    "graph_step",
    "graph_suspended",
    "graph_resumed",
    "graph_ended",
    "run_started",
)
JSON = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner),
    max_leaves=8,
)
FIELDS = st.sampled_from(
    [
        "graph",
        "input",
        "key",
        "node",
        "step",
        "output",
        "finished",
        "frontier",
        "pending",
        "status",
        "directive",
        "agents",
        "counters",
        "seed",
        "forked_from",
        "error",
    ]
)
PAYLOADS = st.dictionaries(FIELDS, JSON, max_size=6)


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.tuples(st.sampled_from(KINDS), PAYLOADS, st.integers(0, 3)), max_size=6),
    st.booleans(),
    st.booleans(),
)
@example([("graph_resumed", {"directive": [1]}, 1)], False, True)
@example([("graph_suspended", {"pending": [1], "agents": []}, 1)], False, True)
@example([("graph_step", {"finished": 3, "step": "x"}, 1)], False, True)
def test_any_journal_folds_or_is_refused_with_a_typed_error(
    rows: list[tuple[str, dict[str, Any], int]], gap: bool, started: bool
) -> None:
    now = datetime.now(UTC)
    if started:  # a valid start, so the fold reaches the entries after it
        rows = [("graph_started", {"graph": "g", "input": None}, 1), *rows]
    entries = [
        JournalEntry(
            seq=i + (1 if gap and i else 0) + 1,
            kind=cast("Any", kind),
            payload=cast("Any", payload),
            schema_version=version,
            recorded_at=now,
        )
        for i, (kind, payload, version) in enumerate(rows)
    ]
    try:
        record = fold_execution("gx_fuzz", entries)
    except (UserError, JournalUnreadable):
        return
    assert isinstance(record, ExecutionRecord)
    assert record.version == entries[-1].seq
