"""The "Live events" example of docs/scale-out.md runs and prints what the page shows."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"


def test_the_live_events_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Live events", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    shown = section.split("It prints", 1)[1].split("```", 2)[1].strip().splitlines()
    script = tmp_path / "live_events.py"
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
    # (the dev server prints its banner on the same stdout first; its log may follow)
    printed = [line for line in done.stdout.splitlines() if not line.startswith("time=")]
    assert printed[-len(shown) :] == shown
