"""The example of docs/scale-out.md's section on context, streaming, ... runs as printed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"
SECTION = "## Context, streaming, compaction, code mode and MCP on Temporal"


def test_the_context_and_streaming_example_prints_what_the_page_shows(tmp_path: Path) -> None:
    text = PAGE.read_text(encoding="utf-8").split(SECTION, 1)[1]
    code = text.split("```python", 1)[1].split("```", 1)[0]
    shown = text.split("It prints:\n\n```", 1)[1].split("```", 1)[0].strip().splitlines()
    script = tmp_path / "context_example.py"
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
