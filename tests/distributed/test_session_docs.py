"""The example of docs/scale-out.md's "Sessions on Temporal" runs and prints what it shows."""

from __future__ import annotations

from pathlib import Path

from .test_docs import PAGE, run_example


def test_the_sessions_on_temporal_example_runs_and_prints_what_the_page_shows(
    tmp_path: Path,
) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Sessions on Temporal", 1)[1]
    run_example(section, tmp_path)


def test_the_governed_session_example_runs_and_prints_what_the_page_shows(
    tmp_path: Path,
) -> None:
    section = PAGE.read_text(encoding="utf-8").split("### A governed session", 1)[1]
    run_example(section, tmp_path)
