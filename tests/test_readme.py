"""The README's first example runs as printed, and every run in it completes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

README = Path(__file__).parents[1] / "README.md"


def test_the_first_example_runs_and_its_last_run_completes(tmp_path: Path) -> None:
    section = README.read_text(encoding="utf-8").split("## A first agent", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    script = tmp_path / "first_agent.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=60, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[add -> 5]", "2 + 3 = 5", "completed Still 5."]
