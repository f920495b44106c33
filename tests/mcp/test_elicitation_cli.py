"""``bastion runs show`` shows a server's pending question; ``runs resume --answer`` answers it."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bastion.cli import app

from .releaser_agent import releaser

AGENT = f"{Path(__file__).with_name('releaser_agent.py')}:releaser"


@pytest.fixture(autouse=True)
def _restore_sys_path(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sys, "path", list(sys.path))  # the agent loader extends it


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def suspended(url: str) -> tuple[str, str]:
    async def go() -> tuple[str, str]:
        async with releaser().with_store(url) as agent:
            result = await agent.run("release")
        assert result.status == "awaiting_approval"
        return result.run_id, result.pending_approvals[0].tool_call_id

    return asyncio.run(go())


def test_a_question_is_shown_and_answered_from_the_command_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    counted = tmp_path / "count.txt"
    counted.touch()
    monkeypatch.setenv("DEMO_COUNT_FILE", str(counted))
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    run_id, call_id = suspended(store)

    shown = cli("runs", "show", run_id, "--plain", "--store", store)
    assert shown.exit_code == 0, shown.output
    assert "why: MCP server 'demo' asks: Release 1.2?" in shown.stdout
    assert f'{call_id}  release(version="1.2")  [question]' in shown.stdout
    assert '"required":["ok"]' in shown.stdout.split("answer schema: ")[1]
    assert f"--answer {call_id}=JSON" in shown.stdout

    resume = ("runs", "resume", run_id, "--agent", AGENT, "--plain", "--store", store)
    wrong = cli(*resume, "--answer", f'{call_id}={{"ok": "yes"}}')
    assert wrong.exit_code == 2, wrong.output
    assert "does not match the requested schema" in wrong.output
    assert cli(*resume, "--answer", f"{call_id}=maybe").exit_code == 2

    first = cli(*resume, "--answer", f'{call_id}={{"ok": true}}')
    assert "Which channel?" in first.output  # asked on the call's second run
    assert counted.read_text() == ""

    done = cli(*resume, "--answer", f'{call_id}={{"channel": "beta"}}')
    assert done.exit_code == 0, done.output
    assert "Done:" in done.stdout
    assert "1.2: released to beta" in done.stdout
    assert counted.read_text() == "release 1.2 beta\n"
