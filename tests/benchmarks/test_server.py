"""The S11 server benchmark stays honest: one small checked pass on the memory store.

The child checks every stream (ids without a gap, a completed ``agent.end``, the answer's
text), so a pass proves the benchmark still drives real runs over real SSE (no timing is
asserted).
"""

from __future__ import annotations

from benchmarks.server import Figures, _child, report


async def test_a_small_run_is_checked_and_reported() -> None:
    figures = Figures(**await _child("memory", 5, 4))
    assert figures.streams == 5
    assert figures.events >= 5 * 4  # at least the answer's deltas of every run, after the gate
    assert 0 < figures.p50 <= figures.p99
    table = report([figures]).splitlines()
    assert table[2].startswith("| store | streams | events after the gate |")
    assert table[4].startswith("| memory | 5 |")
