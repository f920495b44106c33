"""The handoff and filter examples of docs/multi-agent.md run as printed (in a fresh
interpreter) and print what the page says."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

PAGE = Path(__file__).parents[2] / "docs" / "multi-agent.md"


def _blocks(section: str) -> list[str]:
    text = PAGE.read_text(encoding="utf-8").split(section, 1)[1].split("\n## ", 1)[0]
    return [block.split("```", 1)[0] for block in text.split("```python\n")[1:]]


def _run(code: str, tmp_path: Path) -> list[str]:
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
    return done.stdout.splitlines()


def test_the_handoff_example_runs(tmp_path: Path) -> None:
    # covers G-22
    [code] = _blocks("## Handoffs")
    assert _run(code, tmp_path) == [
        "escalated: double charge",
        "triage -> billing {'order': 'A1', 'problem': 'double charge'}",
        "completed Order A1 was charged twice; I have refunded one charge.",
    ]


def test_the_filters_example_runs(tmp_path: Path) -> None:
    # covers G-59
    [code] = _blocks("## Filters")
    assert _run(code, tmp_path) == [
        '{"kind":"compose","filters":[{"kind":"last_n","n":2},{"kind":"strip_reasoning"}]}',
        "['SystemMessage', 'AssistantMessage', 'UserMessage'] "
        "[TextPart(text='Hello!', type='text')]",
    ]
