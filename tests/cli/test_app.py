"""``bastion run`` and ``bastion --version``, run in-process with typer's ``CliRunner``."""

import json
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

import bastion
from bastion.cli import app
from bastion.core import load_event

AGENTS = str(Path(__file__).with_name("scripted_agents.py"))


def bastion_cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def test_run_streams_the_answer_and_exits_0():
    result = bastion_cli("run", f"{AGENTS}:greeter", "Say hello.")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == "● greeter · test:scripted"
    assert "Hello from a scripted agent." in lines
    assert re.fullmatch(r"✓ completed · 1 step · 0 tool calls · \d+ tokens · .+", lines[-1])
    assert "\x1b[" not in result.stdout  # not a terminal: plain text, no ANSI


def test_run_shows_parallel_tool_calls_starting_together_and_ending_in_call_order():
    result = bastion_cli("run", f"{AGENTS}:doubler", "Double 2 and 21.", "--plain")
    assert result.exit_code == 0, result.output
    tool_lines = [line.strip() for line in result.stdout.splitlines() if "double(" in line]
    assert [re.sub(r" \d+(\.\d+)? m?s ", " <t> ", line) for line in tool_lines] == [
        "… double(x=2) running",
        "… double(x=21) running",
        "✓ double(x=2) <t> → 4",
        "✓ double(x=21) <t> → 42",
    ]
    assert "2 doubled is 4 and 21 doubled is 42." in result.stdout
    assert "· 2 steps · 2 tool calls ·" in result.stdout


def test_a_module_level_agent_object_runs_too():
    result = bastion_cli("run", f"{AGENTS}:agent", "ping")
    assert result.exit_code == 0, result.output
    assert "pong" in result.stdout.splitlines()


def test_a_failed_run_shows_why_and_exits_1():
    result = bastion_cli("run", f"{AGENTS}:broken", "Hi.")
    assert result.exit_code == 1
    assert "Invalid API key." in result.stdout
    assert result.stdout.splitlines()[-1].startswith("✗ failed · 1 step")


def test_json_prints_one_event_per_line_that_loads_back():
    result = bastion_cli("run", f"{AGENTS}:doubler", "Double 2 and 21.", "--json")
    assert result.exit_code == 0, result.output
    events = [load_event(line) for line in result.stdout.splitlines()]
    assert events[0].type == "agent.start"
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"
    assert [e.seq for e in events] == list(range(events[0].seq, events[0].seq + len(events)))
    assert [e.result for e in events if e.type == "tool.execute.end"] == ["4", "42"]
    streamed = "".join(e.delta for e in events if e.type == "text.delta")
    assert streamed == "2 doubled is 4 and 21 doubled is 42."


def test_json_exit_code_also_follows_the_status():
    result = bastion_cli("run", f"{AGENTS}:broken", "Hi.", "--json")
    assert result.exit_code == 1
    assert json.loads(result.stdout.splitlines()[-1])["status"] == "failed"


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("no_colon_here", "Invalid spec 'no_colon_here': use 'module:attribute'"),
        ("surely_no_such_module_xyz:agent", "No module named 'surely_no_such_module_xyz'"),
        ("missing/file.py:agent", "No such file: 'missing/file.py'."),
        (f"{AGENTS}:nope", "has no attribute 'nope'. Agents it defines: agent."),
        (f"{AGENTS}:not_an_agent", "is int, not a bastion Agent."),
        (f"{AGENTS}:returns_a_number", "is a factory returning int, not a bastion Agent."),
        (f"{AGENTS}:needs_arguments", "is a callable that needs arguments"),
        (f"{AGENTS}:async_factory", "is an async function"),
    ],
)
def test_a_bad_spec_prints_one_red_line_and_exits_2(spec: str, message: str):
    result = bastion_cli("run", spec, "Hi.")
    assert result.exit_code == 2
    assert result.stdout == ""
    assert len(result.stderr.splitlines()) == 1
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert "Traceback" not in result.stderr


def test_a_module_in_the_current_directory_loads_by_name(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    (tmp_path / "cwd_agent_app.py").write_text(
        "from bastion import Agent\n"
        "from bastion.testing import ScriptedModel\n"
        "agent = Agent('local', model=ScriptedModel(['Loaded from the cwd.']))\n"
    )
    monkeypatch.chdir(tmp_path)
    monkeypatch.delitem(sys.modules, "cwd_agent_app", raising=False)
    result = bastion_cli("run", "cwd_agent_app:agent", "Hi.")
    assert result.exit_code == 0, result.output
    assert "Loaded from the cwd." in result.stdout


def test_version():
    result = bastion_cli("--version")
    assert result.exit_code == 0
    assert result.stdout == f"bastion {bastion.__version__}\n"


@contextmanager
def _sigint_handled() -> Generator[None, None, None]:
    """Let children see SIGINT as a terminal would.

    A background job (as CI runs) starts with SIGINT ignored, and an ignored signal stays
    ignored across exec; a handled one is reset to the default. So handle it while the
    child is spawned.
    """
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def test_ctrl_c_stops_the_run_and_exits_130():
    bastion_script = shutil.which("bastion", path=str(Path(sys.executable).parent))
    assert bastion_script is not None
    with (
        _sigint_handled(),
        subprocess.Popen(
            [bastion_script, "run", f"{AGENTS}:stuck", "Hi.", "--plain"],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        ) as process,
    ):
        try:
            assert process.stdout is not None
            assert process.stderr is not None
            seen: list[str] = []
            for line in process.stdout:
                seen.append(line)
                if line.startswith("step 1"):  # the model now waits forever
                    break
            process.send_signal(signal.SIGINT)
            assert process.wait(timeout=30) == 130
            assert process.stderr.read().startswith("error: interrupted: run run_")
        finally:
            if process.poll() is None:  # never leave a stuck child behind
                process.kill()
                process.wait()
    assert seen == ["● stuck · test:function\n", "step 1 · test:function\n"]


def test_retries_and_fallbacks_are_shown_as_they_happen():
    result = bastion_cli("run", f"{AGENTS}:flaky", "Hi.")
    assert result.exit_code == 0, result.output
    assert result.stdout.splitlines()[2:5] == [
        "  ↻ test:primary failed (Overloaded: Server busy.); retry 1 in 2.00 s",
        "  ⤳ falling back from test:primary to test:backup (RateLimited: Slow down.)",
        "The backup model answered.",
    ]


def test_public_names_are_pinned():
    import bastion.cli

    assert bastion.cli.__all__ == ["app", "main"]


def test_model_option_runs_the_agent_on_another_model():
    # covers issue 3 (`bastion run … --model provider:model`)
    from bastion.providers import register_provider
    from bastion.testing import ScriptedModel

    def factory(name: str, **_: object) -> ScriptedModel:
        return ScriptedModel([f"answered by {name}"], name=name)

    register_provider("cli-test", factory, replace=True)
    result = bastion_cli("run", f"{AGENTS}:greeter", "Hi.", "--model", "cli-test:other")
    assert result.exit_code == 0, result.output
    assert "answered by other" in result.stdout
    bad = bastion_cli("run", f"{AGENTS}:greeter", "Hi.", "--model", "nowhere:x")
    assert bad.exit_code == 2
    assert "Unknown model provider 'nowhere'" in bad.stderr
