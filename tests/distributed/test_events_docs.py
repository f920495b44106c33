"""The Temporal event examples of the docs run and print what their pages show."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).parents[2] / "docs"


def _run_section(page: str, heading: str, tmp_path: Path) -> None:
    """Run the first Python block after ``heading``; assert it prints what follows it."""
    section = (DOCS / page).read_text(encoding="utf-8").split(heading, 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    shown = section.split("It prints", 1)[1].split("```", 2)[1].strip().splitlines()
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=90,
        check=False,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, done.stderr
    # (the dev server prints its banner on the same stdout first)
    assert done.stdout.splitlines()[-len(shown) :] == shown


@pytest.mark.timeout(120)  # a dev server and a worker in a subprocess, on a shared machine
def test_the_live_events_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    _run_section("scale-out.md", "## Live events", tmp_path)


@pytest.mark.timeout(120)
def test_the_temporal_server_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    _run_section("server.md", "## Temporal runs", tmp_path)
