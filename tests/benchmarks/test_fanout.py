"""The fan-out benchmark stays honest: every timed case runs its children and checks them."""

from __future__ import annotations

from benchmarks.fanout import cases, report


async def test_every_timed_case_runs_and_checks_its_outputs() -> None:
    timed = cases(3)
    for step in timed.values():
        await step()  # raises AssertionError on a wrong output
    lines = report(dict.fromkeys(timed, 0.01), 3)
    assert lines[0].startswith("| 3 children |")
