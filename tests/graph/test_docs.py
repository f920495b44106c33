"""The examples of docs/graph.md run as printed, in a fresh interpreter."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "docs" / "graph.md"


def blocks() -> list[str]:
    text = PAGE.read_text(encoding="utf-8")
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


@pytest.mark.parametrize(
    ("index", "printed"),
    [
        (0, ["completed 2 facts, looks thin"]),
        (1, ["4 ('draft',) draft 17 reviewed"]),
        (2, ["['first', 'secon', 'third']"]),
        (
            3,
            [
                "graph.before ",
                "node.before ",
                "x x:progress",
                "node.after ",
                "graph.after ",
                "completed",
            ],
        ),
        (4, ["['GRAPHS', 'ARE', 'FUN']"]),
        (
            5,
            [
                "completed {'email': 'ada@example.org', 'discount': 10, 'welcome_sent': True, "
                "'crm_synced': True, 'done': True}"
            ],
        ),
    ],
)
def test_graph_page_examples_run(index: int, printed: list[str], tmp_path: Path) -> None:
    script = tmp_path / "example.py"
    script.write_text(blocks()[index], encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == printed
