"""examples/fan_out_review.py runs offline, as printed in docs/multi-agent.md, twice."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).parents[2] / "examples" / "fan_out_review.py"


def _run(db: Path) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-W", "error", str(SCRIPT), str(db)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_the_review_fans_out_guards_the_merge_and_resumes_from_the_journal(tmp_path: Path) -> None:
    db = tmp_path / "runs.db"
    tail = [
        "excluded: style",
        "position bias: False",
        "chosen: correctness: div(1, 0) raises ZeroDivisionError: guard b == 0.",
    ]
    assert _run(db) == ["security: completed", "correctness: completed", "style: completed", *tail]
    assert _run(db) == [
        "security: completed (from the journal)",
        "correctness: completed (from the journal)",
        "style: completed (from the journal)",
        *tail,
    ]
