"""The example of docs/scale-out.md runs as printed and prints what the page says."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"


def test_the_scale_out_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    run_example(PAGE.read_text(encoding="utf-8"), tmp_path)


def run_example(text: str, tmp_path: Path) -> None:
    """Run the first python block of ``text``; it prints its "It prints:" block."""
    code = text.split("```python", 1)[1].split("```", 1)[0]
    shown = text.split("It prints:\n\n```", 1)[1].split("```", 1)[0].strip().splitlines()
    script = tmp_path / "example.py"
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
    # (the dev server prints its banner on the same stdout first)
    assert done.stdout.splitlines()[-len(shown) :] == shown
