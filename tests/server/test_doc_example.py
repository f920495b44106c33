"""The example of docs/server.md runs as printed (in a fresh interpreter)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

DOCS = Path(__file__).parents[2] / "docs"


def test_the_server_page_example_runs(tmp_path: Path) -> None:
    text = (DOCS / "server.md").read_text(encoding="utf-8")
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    printed = text.split("It prints:\n\n```\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed
