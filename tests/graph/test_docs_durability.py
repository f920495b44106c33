"""The example of docs/graph.md "Checkpoints and resume" runs as printed (a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "graph.md"


def test_the_checkpoints_and_resume_example_prints_what_the_page_says(tmp_path: Path) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Checkpoints and resume", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    printed = section.split("prints\n\n```\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
