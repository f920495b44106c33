"""The CLI at its edges: decisions on outcome-unknown calls and budgets, suspension notices,
errors that exit 2 without a traceback, and Ctrl-C (which aborts the run, not leaves it live).
"""

from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bastion.cli import app
from bastion.cli._decisions import pending_of_entries
from bastion.core import new_id
from bastion.stores import JournalEntry, NewEntry, open_store

from .test_runs import AGENTS, read_run, store, suspended_run

__all__ = ["store"]


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _run_in_store(url: str, run_id: str, entries: list[NewEntry], agent: str) -> None:
    async def go() -> None:
        async with open_store(url) as stores:
            await stores.journal.append(run_id, entries, expected_seq=0, agent=agent)

    asyncio.run(go())


def crashed_mailer_run(url: str) -> tuple[str, str]:
    """A mailer run as a crash leaves it in ``url``: send_email approved and started, its
    result never recorded. (The run is made in a scratch store and its journal's first
    entries copied, under the same run id.)"""
    scratch = f"{url}.{new_id('scratch')}.db"
    run_id, call_id = suspended_run(scratch)
    approved = cli(
        "runs",
        "resume",
        run_id,
        "--agent",
        f"{AGENTS}:mailer",
        "--approve",
        call_id,
        "--store",
        scratch,
    )
    assert approved.exit_code == 0, approved.output
    _, entries = read_run(scratch, run_id)
    kinds = [e.kind for e in entries]
    cut = kinds.index("tool_call_started") + 1  # killed right after the ledger entry
    copied = [NewEntry(kind=e.kind, payload=e.payload) for e in entries[:cut]]
    _run_in_store(url, run_id, copied, "mailer")
    return run_id, call_id


def test_show_of_a_crashed_run_names_the_call_left_open_and_what_resume_will_do(store: str):
    run_id, call_id = crashed_mailer_run(store)
    shown = cli("runs", "show", run_id, "--plain")
    assert shown.exit_code == 0, shown.output
    out = shown.stdout
    assert f"{run_id} · mailer · running" in out
    assert "Started with no recorded result" in out
    assert (
        f'{call_id}  send_email(to="bob@example.com", body="Hi Bob")  [side_effecting]  '
        f"on resume: outcome unknown, a person decides (--happened {call_id}[:RESULT]"
    ) in out


def test_an_outcome_unknown_call_is_shown_and_it_happened_records_it_without_rerunning(
    store: str,
):
    # covers G-53
    run_id, call_id = crashed_mailer_run(store)
    resumed = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer", "--plain")
    assert resumed.exit_code == 1, resumed.output  # suspended: not completed
    out = resumed.stdout
    assert f"Run {run_id} is waiting for a decision on:" in out
    assert f'{call_id}  send_email(to="bob@example.com", body="Hi Bob")  [outcome unknown]' in out
    assert "why: Outcome unknown after crash" in out
    assert f"--happened {call_id}[:RESULT] | --approve {call_id} | --deny {call_id}" in out
    command = out.split("Resume it with one decision per item, e.g.:")[1].strip()
    assert command == shlex.join(
        ["bastion", "runs", "resume", run_id, "--agent", f"{AGENTS}:mailer", "--happened", call_id]
    )
    shown = cli("runs", "show", run_id, "--plain")
    assert shown.exit_code == 0, shown.output
    assert "[outcome unknown]" in shown.stdout
    assert f"--happened {call_id}[:RESULT]" in shown.stdout

    done = cli(
        "runs",
        "resume",
        run_id,
        "--agent",
        f"{AGENTS}:mailer",
        "--happened",
        f"{call_id}:sent to bob",
    )
    assert done.exit_code == 0, done.output
    assert "Done: sent to bob" in done.stdout
    record, entries = read_run(store, run_id)
    assert record is not None
    assert record.status == "completed"
    # The human's text is the call's one result: the tool (which says "sent to
    # bob@example.com") did not run again.
    assert _results(entries, call_id) == ["sent to bob"]


def _results(entries: list[JournalEntry], call_id: str) -> list[object]:
    """The results journaled for the call, in order."""
    return [
        e.payload["content"]
        for e in entries
        if e.kind == "tool_result" and e.payload["tool_call_id"] == call_id
    ]


def test_an_outcome_unknown_call_can_be_run_again_or_denied(store: str):
    for decision, expected, results in (
        ("--approve", "Done: sent to bob@example.com", ["sent to bob@example.com"]),
        ("--deny", "Done: Denied: did not happen", ["Denied: did not happen"]),
    ):
        run_id, call_id = crashed_mailer_run(store)
        cli("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer")
        target = call_id if decision == "--approve" else f"{call_id}:did not happen"
        done = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer", decision, target)
        assert done.exit_code == 0, done.output
        assert expected in done.stdout
        assert _results(read_run(store, run_id)[1], call_id) == results


def test_a_budget_interrupt_is_shown_and_raised_or_denied_from_the_cli(store: str):
    # covers L-24
    first = cli("run", f"{AGENTS}:spender", "Look up two things.", "--plain")
    assert first.exit_code == 1, first.output
    run_id = first.stdout.split("Run ")[1].split()[0]
    assert "is waiting for a decision on:" in first.stdout
    assert "tool:lookup calls per minute: 1 of max 1  [interrupt]" in first.stdout
    shown = cli("runs", "show", run_id, "--plain")
    [interrupt_id] = [
        line.split()[0] for line in shown.stdout.splitlines() if line.endswith("[interrupt]")
    ]
    assert f"--raise {interrupt_id}=MAX | --deny {interrupt_id}[:REASON]" in shown.stdout
    assert f"--raise {interrupt_id}=MAX" in first.stdout  # the printed resume command

    bad = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:spender", "--raise", "int_x=3")
    assert bad.exit_code == 2
    assert "'int_x' is not a pending budget interrupt" in bad.stderr

    raised = cli(
        "runs", "resume", run_id, "--agent", f"{AGENTS}:spender", "--raise", f"{interrupt_id}=2"
    )
    assert raised.exit_code == 0, raised.output
    assert "Found: found a, found b" in raised.stdout

    second = cli("run", f"{AGENTS}:spender", "Look up two things.", "--plain")
    run_id = second.stdout.split("Run ")[1].split()[0]
    record, entries = read_run(store, run_id)
    [interrupt] = pending_of_entries(entries)
    interrupt_id = interrupt.id
    denied = cli(
        "runs", "resume", run_id, "--agent", f"{AGENTS}:spender", "--deny", f"{interrupt_id}:no"
    )
    assert denied.exit_code == 0, denied.output
    assert "Found: found a, " in denied.stdout
    assert "found b" not in denied.stdout
    assert record is not None


def test_run_that_suspends_prints_the_run_id_and_the_exact_resume_command(store: str):
    first = cli("run", f"{AGENTS}:stored_mailer", "Email Bob.", "--plain")
    assert first.exit_code == 1, first.output
    run_id = first.stdout.split("Run ")[1].split()[0]
    command = first.stdout.split("Resume it with one decision per item, e.g.:")[1].strip()
    argv = shlex.split(command)
    assert argv[:6] == ["bastion", "runs", "resume", run_id, "--agent", f"{AGENTS}:stored_mailer"]
    done = cli(*argv[1:])  # the printed command, as printed
    assert done.exit_code == 0, done.output
    assert "Done: sent to bob@example.com" in done.stdout


def test_json_output_keeps_the_notice_on_stderr(store: str):
    first = cli("run", f"{AGENTS}:stored_mailer", "Email Bob.", "--json")
    assert first.exit_code == 1
    for line in first.stdout.splitlines():
        json.loads(line)
    assert "Resume it with" in first.stderr


def test_help_shows_json_as_a_flag():
    for args in (("run", "--help"), ("runs", "resume", "--help"), ("runs", "list", "--help")):
        text = cli(*args).stdout
        assert "--json " in text
        assert "<bool>" not in text


@pytest.mark.parametrize(
    ("source", "shown"),
    [
        ('raise RuntimeError("boom")\n', "broken_module.py:1: RuntimeError: boom"),
        ("def f(:\n", "broken_module.py:1: SyntaxError: invalid syntax"),
        ("import json\njson.loads('{')\n", "JSONDecodeError"),
    ],
)
def test_an_agent_module_that_fails_to_import_exits_2_without_a_traceback(
    tmp_path: Path, source: str, shown: str
):
    module = tmp_path / "broken_module.py"
    module.write_text(source)
    result = cli("run", f"{module}:agent", "hi")
    assert result.exit_code == 2
    assert shown in result.stderr
    assert "Traceback" not in result.output
    assert result.stderr.startswith("error: Importing")


def test_unusable_stores_and_a_corrupt_journal_exit_2(store: str, tmp_path: Path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    for url in (f"sqlite:///{blocker}/sub/x.db", "redis://127.0.0.1:1/0"):
        listed = cli("runs", "list", "--store", url)
        assert listed.exit_code == 2, listed.output
        assert "Cannot open" in listed.stderr
        assert "Traceback" not in listed.output
        ran = cli("runs", "resume", "run_x", "--agent", f"{AGENTS}:mailer", "--store", url)
        assert ran.exit_code == 2, ran.output
        assert "Cannot open" in ran.stderr
    run_id, _ = suspended_run(store)
    import sqlite3

    conn = sqlite3.connect(store.removeprefix("sqlite:///"))
    conn.execute("UPDATE journal SET payload = '{oops' WHERE run_id = ? AND seq = 2", (run_id,))
    conn.commit()
    conn.close()
    for args in (
        ("runs", "show", run_id),
        ("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer"),
    ):
        result = cli(*args)
        assert result.exit_code == 2, result.output
        assert "Journal entry 2 ('model_response') is damaged" in result.stderr
        assert "Traceback" not in result.output


BLOCKING = """
import asyncio, os
from bastion import Agent, tool
from bastion.testing import Call, ScriptedModel, Turn

@tool(side_effect_class="read_only")
async def wait() -> str:
    '''Wait for ever.'''
    await asyncio.Event().wait()
    return "never"

agent = Agent(
    "waiter",
    model=ScriptedModel([Turn(tool_calls=[Call("wait")]), "done"]),
    tools=[wait],
    store=os.environ["BASTION_STORE"],
)
"""


async def test_ctrl_c_aborts_the_run_and_the_store_shows_it_aborted(
    tmp_path: Path, store: str
) -> None:
    module = tmp_path / "waiter.py"
    module.write_text(BLOCKING)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "bastion.cli",
        "run",
        f"{module}:agent",
        "Wait.",
        "--plain",
        env=env,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )
    assert process.stdout is not None
    async for line in process.stdout:  # the tool is running: the run is live
        if b"wait" in line:
            break
    process.send_signal(signal.SIGINT)
    out, err = await process.communicate()
    assert process.returncode == 130, (out, err)
    assert b"Traceback" not in err
    assert b"interrupted: run run_" in err
    async with open_store(store) as stores:
        [record] = (await stores.journal.list_runs()).runs
        entries = await stores.journal.read(record.run_id)
    assert record.status == "aborted"
    assert entries[-1].kind == "run_ended"
