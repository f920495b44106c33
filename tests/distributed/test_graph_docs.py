"""The "Graphs on Temporal" example of docs/scale-out.md runs and prints what the page says.

It runs in the test's process (its ``main()`` awaited here): a process that used a Temporal
client may abort while the interpreter shuts down (temporalio/sdk-python#300).
"""

from __future__ import annotations

import os
import sys
import types
from pathlib import Path

import pytest

PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"


async def test_the_graphs_on_temporal_example_runs_and_prints_what_the_page_shows(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Graphs on Temporal", 1)[1]
    code = section.split("```python", 1)[1].split("```", 1)[0]
    shown = section.split("It prints:\n\n```", 1)[1].split("```", 1)[0].strip().splitlines()
    path = f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    monkeypatch.setenv("PATH", path)  # where the `temporal` binary is
    module = types.ModuleType("graphs_on_temporal")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    exec(compile(code, "graphs_on_temporal.py", "exec"), module.__dict__)
    await module.main()
    # (the dev server prints its banner on the same stdout first)
    assert capsys.readouterr().out.splitlines()[-len(shown) :] == shown
