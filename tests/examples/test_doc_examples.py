"""The examples of docs/testing.md, of the two-way loop in docs/agent-loop.md, of the
agent's governance options in docs/governance.md and of wrapping ``tool()`` in docs/tools.md
run as printed (in a fresh interpreter) and print what the pages say."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

DOCS = Path(__file__).parents[2] / "docs"


def _blocks(page: str, after: str = "") -> list[str]:
    text = (DOCS / page).read_text(encoding="utf-8")
    if after:
        text = text.split(after, 1)[1].split("\n## ", 1)[0]
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


@pytest.mark.parametrize(
    ("index", "printed"),
    [(0, ["trajectory ok"]), (1, ["It is 18 C and sunny in Paris."])],
)
def test_testing_page_examples_run(index: int, printed: list[str], tmp_path: Path) -> None:
    assert _run(_blocks("testing.md")[index], tmp_path) == printed


def test_the_drive_example_runs(tmp_path: Path) -> None:
    # covers S-13
    [code] = _blocks("agent-loop.md", "## Driving a run")
    assert _run(code, tmp_path) == ["transfer -> sent 100 to bob", "completed Done."]


def test_the_governance_options_example_runs(tmp_path: Path) -> None:
    code = _blocks("governance.md", "## In the agent")[0]
    assert _run(code, tmp_path) == [
        "oracle.exceeded tool:search",
        "b rate_limited",
        "completed Found a; b must wait.",
    ]


def test_the_tool_wrapper_example_runs(tmp_path: Path) -> None:
    [code] = _blocks("tools.md", "## Wrapping `tool()`")
    assert _run(code, tmp_path) == [
        "stock read_only 5.0",
        "tool() got unknown keyword arguments ['side_efect_class'] "
        "(did you mean 'side_effect_class'?).",
    ]
