"""The examples of docs/console.md and of the sessions section of docs/server.md run."""

from __future__ import annotations

import runpy
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from fastapi import FastAPI

from .conftest import running

DOCS = Path(__file__).parents[2] / "docs"


def _block(page: str, after: str) -> str:
    text = (DOCS / page).read_text(encoding="utf-8").split(after, 1)[1]
    return text.split("```python\n", 1)[1].split("```", 1)[0]


def test_the_sessions_example_prints_what_the_page_says(tmp_path: Path) -> None:
    text = (DOCS / "server.md").read_text(encoding="utf-8").split("## Sessions", 1)[1]
    printed = text.split("It prints", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "sessions.py"
    script.write_text(_block("server.md", "## Sessions"), encoding="utf-8")
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


async def test_the_console_example_serves_the_console(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    script = tmp_path / "console_app.py"
    script.write_text(_block("console.md", "The same from Python"), encoding="utf-8")
    monkeypatch.chdir(tmp_path)  # its sqlite:///runs.db lands here
    app = runpy.run_path(str(script), run_name="console_app")["app"]
    assert isinstance(app, FastAPI)
    transport = httpx.ASGITransport(app=app)
    async with running(app), httpx.AsyncClient(transport=transport, base_url="http://x") as http:
        page = await http.get("/console/")
        assert page.status_code == 200
        assert "<title>Bastion console</title>" in page.text
        agents = await http.get("/agents", headers={"Authorization": "Bearer secret-acme"})
        assert agents.json() == [{"name": "support", "model": "test:function"}]
