"""``bastion runs list|show|resume|export`` against a temporary SQLite store."""

import asyncio
import json
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bastion.cli import app
from bastion.cli._decisions import build_directive
from bastion.core import UserError
from bastion.governance import MutateDecision
from bastion.stores import JournalEntry, NewEntry, RunRecord, open_store

from . import scripted_agents

AGENTS = str(Path(__file__).with_name("scripted_agents.py"))


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'runs.db'}"
    monkeypatch.setenv("BASTION_STORE", url)
    return url


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def read_run(url: str, run_id: str) -> tuple[RunRecord | None, list[JournalEntry]]:
    async def go() -> tuple[RunRecord | None, list[JournalEntry]]:
        async with open_store(url) as stores:
            return await stores.journal.get_run(run_id), await stores.journal.read(run_id)

    return asyncio.run(go())


def suspended_run(url: str) -> tuple[str, str]:
    """Start a mailer run on the store; it suspends on send_email. Return (run id, call id)."""

    async def go() -> tuple[str, str]:
        agent = scripted_agents.mailer().with_store(url)
        try:
            result = await agent.run("Email Bob.")
        finally:
            await agent.aclose()
        assert result.status == "awaiting_approval"
        assert result.state is not None
        return result.run_id, result.state.pending_approvals[0].call.id

    return asyncio.run(go())


def test_list_shows_the_runs_of_the_store_with_filters_and_json(store: str):
    run_id, _ = suspended_run(store)
    result = cli("runs", "list", "--plain")
    assert result.exit_code == 0, result.output
    [row] = [line for line in result.stdout.splitlines() if run_id in line]
    assert "mailer" in row
    assert "awaiting_approval" in row
    listed = cli("runs", "list", "--json", "--status", "awaiting_approval", "--store", store)
    [record] = [json.loads(line) for line in listed.stdout.splitlines()]
    assert record["run_id"] == run_id
    assert record["agent"] == "mailer"
    assert cli("runs", "list", "--json", "--status", "completed").stdout == ""
    assert cli("runs", "list", "--json", "--agent", "nobody").stdout == ""


def test_list_pages(store: str):
    ids = {suspended_run(store)[0] for _ in range(3)}
    first = cli("runs", "list", "--limit", "2", "--plain")
    assert "More: --offset 2" in first.stdout
    second = cli("runs", "list", "--json", "--limit", "2", "--offset", "2")
    page1 = [
        json.loads(x)["run_id"]
        for x in cli("runs", "list", "--json", "--limit", "2").stdout.splitlines()
    ]
    page2 = [json.loads(x)["run_id"] for x in second.stdout.splitlines()]
    assert set(page1 + page2) == ids
    assert len(page2) == 1


def test_show_names_the_pending_call_its_arguments_and_classification(store: str):
    run_id, call_id = suspended_run(store)
    result = cli("runs", "show", run_id, "--plain")
    assert result.exit_code == 0, result.output
    out = result.stdout
    assert f"{run_id} · mailer · awaiting_approval" in out
    assert call_id in out
    assert 'send_email(to="bob@example.com", body="Hi Bob")' in out
    assert "side_effect_class=side_effecting" in out
    kinds = [line.split()[1] for line in out.split("Journal:")[1].splitlines() if line.strip()]
    assert kinds == ["run_started", "model_response", "interrupt_raised"]


def test_resume_with_approve_runs_the_call_and_finishes(store: str):
    run_id, call_id = suspended_run(store)
    scripted_agents.SENT.clear()
    result = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer", "--approve", call_id)
    assert result.exit_code == 0, result.output
    assert "Done: sent to bob@example.com" in result.stdout
    assert result.stdout.splitlines()[-1].startswith("✓ completed")
    record, entries = read_run(store, run_id)
    assert record is not None
    assert record.status == "completed"
    assert [e.kind for e in entries][3:] == [
        "interrupt_decided",
        "tool_call_started",
        "tool_result",
        "model_response",
        "run_ended",
    ]
    assert entries[-1].kind == "run_ended"
    # resuming an ended run runs nothing again
    again = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer")
    assert again.exit_code == 0
    assert read_run(store, run_id)[1] == entries


def test_resume_with_deny_gives_the_model_the_reason(store: str):
    run_id, call_id = suspended_run(store)
    result = cli(
        "runs", "resume", run_id, "--agent", f"{AGENTS}:mailer", "--deny", f"{call_id}:not today"
    )
    assert result.exit_code == 0, result.output
    assert "Done: Denied: not today" in result.stdout
    exported = [json.loads(x) for x in cli("runs", "export", run_id).stdout.splitlines()]
    [decided] = [e for e in exported if e["kind"] == "interrupt_decided"]
    assert "not today" in json.dumps(decided["payload"])


def test_resume_without_a_decision_leaves_the_run_waiting_and_says_for_what(store: str):
    # SPEC §3.1 scenario 9: no decision, no model call; the run stays suspended.
    run_id, _ = suspended_run(store)
    _, before = read_run(store, run_id)
    result = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:mailer")
    assert result.exit_code == 1, result.output  # suspended, not completed
    assert f"Run {run_id} is waiting for a decision on:" in result.output
    assert "--approve" in result.output
    record, after = read_run(store, run_id)
    assert record is not None
    assert record.status == "awaiting_approval"
    assert [e.kind for e in after] == [e.kind for e in before]  # nothing was written


def test_export_prints_the_journal_as_json_lines(store: str):
    run_id, _ = suspended_run(store)
    result = cli("runs", "export", run_id)
    assert result.exit_code == 0, result.output
    lines = [json.loads(x) for x in result.stdout.splitlines()]
    _, entries = read_run(store, run_id)
    assert [(x["seq"], x["kind"], x["payload"]) for x in lines] == [
        (e.seq, e.kind, e.payload) for e in entries
    ]


def test_unknown_run_and_bad_store_exit_2(store: str):
    for command in ("show", "export"):
        result = cli("runs", command, "run_nope")
        assert result.exit_code == 2
        assert "No run 'run_nope'" in result.stderr
    assert cli("runs", "list", "--store", "ftp://x").exit_code == 2


def test_build_directive_reads_every_option():
    interrupts = {"int_1": {"oracle": "tool:lookup", "limit_type": "calls", "window": "minute"}}
    directive = build_directive(
        ["a"],
        ["b:too risky", "c", "int_2:no"],
        ["d:sent it"],
        ["int_1=5"],
        interrupts | {"int_2": {}},
    )
    assert directive is not None
    assert [(d.tool_call_id, d.granted, d.reason, d.result) for d in directive.approvals] == [
        ("a", True, None, None),
        ("b", False, "too risky", None),
        ("c", False, None, None),
        ("d", True, None, "sent it"),
    ]
    assert [(r.interrupt_id, r.decision) for r in directive.interrupts] == [
        ("int_2", {"decision": "deny", "reason": "no"}),
        (
            "int_1",
            MutateDecision(oracle="tool:lookup", limit_type="calls", max=5.0, window="minute"),
        ),
    ]
    assert build_directive([], [], [], [], {}) is None
    with pytest.raises(UserError, match="decided more than once"):
        build_directive(["a"], ["a"], [], [], {})
    with pytest.raises(UserError, match="not a pending budget interrupt"):
        build_directive([], [], [], ["int_9=3"], interrupts)
    with pytest.raises(UserError, match="MAX >= 0"):
        build_directive([], [], [], ["int_1=lots"], interrupts)


def test_prune_deletes_finished_runs_by_count_and_age_and_keeps_waiting_ones(store: str):
    waiting, _ = suspended_run(store)

    async def finished() -> list[str]:
        async with open_store(store) as stores:
            for n in range(3):
                entry = NewEntry(kind="model_response", payload={"n": n})
                await stores.journal.append(f"done{n}", [entry], expected_seq=0, status="completed")
                await stores.sessions.append(f"s{n}", kind="message", payload={})
            return [r.run_id for r in (await stores.journal.list_runs()).runs]

    assert len(asyncio.run(finished())) == 4
    result = cli("runs", "prune", "--keep-last", "1", "--sessions", "--plain")
    assert result.exit_code == 0, result.output
    assert "Deleted 2 of 4 runs." in result.stdout  # the newest kept, the waiting one too
    assert "Deleted 2 of 3 sessions." in result.stdout
    listed = cli("runs", "list", "--json")
    assert [json.loads(line)["run_id"] for line in listed.stdout.splitlines()] == [
        "done2",
        waiting,
    ]
    assert cli("runs", "prune", "--older-than", "0s").stdout == "Deleted 1 of 2 runs.\n"
    bad = cli("runs", "prune", "--older-than", "soon")
    assert bad.exit_code == 2
    assert "number and a unit" in bad.output
    assert cli("runs", "prune").exit_code == 2  # neither rule given


def test_a_parked_sub_agent_is_shown_and_resumed_through_its_parents_call(store: str):
    # covers §3.1 scenario 29 (the CLI decides a child's approval through its parent)
    async def go() -> str:
        agent = scripted_agents.boss().with_store(store)
        try:
            result = await agent.run("Have Bob emailed.")
        finally:
            await agent.aclose()
        assert result.status == "awaiting_approval"
        return result.run_id

    run_id = asyncio.run(go())
    shown = cli("runs", "show", run_id, "--plain")
    assert shown.exit_code == 0, shown.output
    assert "m1  mailer(" in shown.stdout
    assert "[sub-agent]" in shown.stdout
    assert 'sub-agent waits on: send_email(to="bob@example.com", body="Hi Bob")' in shown.stdout
    assert f"runs resume {run_id} --agent MODULE:ATTR --approve m1" in shown.stdout
    assert "decide with: --approve m1 | --deny m1[:REASON]" in shown.stdout
    result = cli("runs", "resume", run_id, "--agent", f"{AGENTS}:boss", "--approve", "m1")
    assert result.exit_code == 0, result.output
    assert "Boss: Done: sent to bob@example.com" in result.stdout
    listed = cli("runs", "list", "--json")
    rows = [json.loads(line) for line in listed.stdout.splitlines()]
    statuses = sorted((row["agent"], row["status"]) for row in rows)
    assert statuses == [("boss", "completed"), ("mailer", "completed")]
