"""The example of docs/scale-out.md's "Governance across workers" runs as the page shows."""

from __future__ import annotations

from pathlib import Path

from .test_docs import PAGE, run_example


def test_the_governance_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Governance across workers", 1)[1]
    run_example(section, tmp_path)
