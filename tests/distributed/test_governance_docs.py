"""The example of docs/scale-out.md's "Governance across workers" runs as the page shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"


def test_the_governance_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8").split("## Governance across workers", 1)[1]
    code = text.split("```python", 1)[1].split("```", 1)[0]
    shown = text.split("It prints:\n\n```", 1)[1].split("```", 1)[0].strip().splitlines()
    script = tmp_path / "governance.py"
    script.write_text(code, encoding="utf-8")
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        env={**os.environ, "PATH": path},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[-len(shown) :] == shown
