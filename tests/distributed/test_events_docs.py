"""The Temporal event examples of the docs run and print what their pages show."""

from __future__ import annotations

from pathlib import Path

import pytest

from .test_docs import run_example

DOCS = Path(__file__).parents[2] / "docs"


def _run_section(page: str, heading: str, tmp_path: Path) -> None:
    """Run the first Python block after ``heading``; assert it prints what follows it."""
    run_example((DOCS / page).read_text(encoding="utf-8").split(heading, 1)[1], tmp_path)


@pytest.mark.timeout(120)  # a dev server and a worker in a subprocess, on a shared machine
def test_the_live_events_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    _run_section("scale-out.md", "## Live events", tmp_path)


@pytest.mark.timeout(120)
def test_the_temporal_server_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    _run_section("server.md", "## Temporal runs", tmp_path)
