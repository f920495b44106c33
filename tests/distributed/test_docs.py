"""The example of docs/scale-out.md runs as printed and prints what the page says."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"


def test_the_scale_out_example_runs_and_prints_what_the_page_shows(tmp_path: Path) -> None:
    run_example(PAGE.read_text(encoding="utf-8"), tmp_path)


def test_the_context_and_streaming_example_prints_what_the_page_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    # run in this process: a short script's exit can abort in temporalio's native threads
    # (temporalio/sdk-python#300), which says nothing of the example
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")
    text = PAGE.read_text(encoding="utf-8")
    code, shown = example(text.split("## Context, streaming, compaction, code mode and MCP", 1)[1])
    exec(compile(code, "scale_out_context.py", "exec"), {"__name__": "__main__"})
    assert capsys.readouterr().out.splitlines()[-len(shown) :] == shown


def example(text: str) -> tuple[str, list[str]]:
    """The first Python block of ``text`` and the lines after "It prints:"."""
    code = text.split("```python", 1)[1].split("```", 1)[0]
    shown = text.split("It prints", 1)[1].split("```", 2)[1].strip().splitlines()
    return code, shown


def run_example(text: str, tmp_path: Path) -> None:
    """Run the first Python block of ``text`` here; it prints what follows "It prints:".

    In this process, not as a script: a short script's exit can abort in temporalio's native
    threads (temporalio/sdk-python#300), which says nothing of the example.
    """
    code, shown = example(text)
    out = io.StringIO()
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    with pytest.MonkeyPatch.context() as patch, contextlib.redirect_stdout(out):
        patch.setenv("PATH", path)  # the example finds the dev server on PATH
        patch.chdir(tmp_path)
        exec(compile(code, str(tmp_path / "scale_out.py"), "exec"), {"__name__": "__main__"})
    assert out.getvalue().splitlines()[-len(shown) :] == shown
