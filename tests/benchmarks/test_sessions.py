"""The S10 sessions benchmark stays honest: one small checked pass on the memory store.

The child checks every session's transcript and journal after timing, so a pass proves the
benchmark still drives real sessions end to end (no timing is asserted).
"""

from __future__ import annotations

from benchmarks.sessions import Figures, _child, report


async def test_a_small_run_is_checked_and_reported() -> None:
    figures = Figures(**await _child("memory", 5, 2))
    assert (figures.sessions, figures.turns, figures.steps) == (5, 10, 20)
    assert 0 < figures.step_p50 <= figures.step_p95 <= figures.step_p99 <= figures.turn_p95
    table = report([figures]).splitlines()
    assert table[2].startswith("| store | sessions | wall s | steps/s | turns/s |")
    assert table[4].startswith("| memory | 5 |")
