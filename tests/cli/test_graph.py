"""``bastion graph run|resume|show|history|fork`` and ``runs list|resume`` on graph executions.

Driven in-process with typer's ``CliRunner`` on the review example (a map of writer
agents, an editor agent whose ``publish`` tool needs approval), on a SQLite store.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bastion.cli import app

EXAMPLE = str(Path(__file__).parents[2] / "examples" / "graph_review.py") + ":graph"


@pytest.fixture
def store(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    url = f"sqlite:///{tmp_path / 'graphs.db'}"
    monkeypatch.setenv("BASTION_STORE", url)
    return url


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, list(args))


def _suspended(store: str) -> str:
    result = cli("graph", "run", EXAMPLE, "--input", '"graphs"', "--store", store, "--plain")
    assert result.exit_code == 1, result.output
    match = re.search(r"Execution (gx_\w+) is waiting for:", result.output)
    assert match is not None, result.output
    return match.group(1)


def test_run_renders_node_signals_and_prints_the_resume_command(store: str) -> None:
    result = cli("graph", "run", EXAMPLE, "--input", '"graphs"', "--store", store, "--plain")
    assert result.exit_code == 1, result.output
    lines = result.output.splitlines()
    assert lines[0].startswith("▶ review  review#gx_")
    assert '  ✓ outline → ["why graphs", "how graphs work", "when to use graphs"]' in lines
    assert any(line.startswith("  ✓ sections → ") for line in lines)
    assert "  ⏸ editor waits: Suspended: agent 'editor' awaits approval" in lines
    assert "■ review suspended" in lines
    execution_id = re.findall(r"gx_\w+", lines[0])[0]
    assert "  publish_1  node editor: publish needs approval" in lines
    assert (
        f"  bastion graph resume {execution_id} --graph {EXAMPLE} --store {store} "
        "--approve publish_1"
    ) in lines


def test_show_history_and_runs_list_read_the_store(store: str) -> None:
    execution_id = _suspended(store)
    listed = cli("runs", "list", "--plain")
    assert listed.exit_code == 0, listed.output
    row = next(line for line in listed.output.splitlines() if execution_id in line)
    assert row.split()[1:4] == ["graph", "review", "awaiting_approval"]
    journal = cli("runs", "show", execution_id, "--plain")
    assert journal.exit_code == 0, journal.output
    assert 'graph_started      review input="graphs"' in journal.output
    assert 'graph_node_finished outline@0 → ["why graphs", ' in journal.output
    assert "graph_suspended    waiting for: publish_1" in journal.output
    shown = cli("graph", "show", execution_id, "--plain")
    assert shown.exit_code == 0, shown.output
    assert f"{execution_id} · graph review · awaiting_approval" in shown.output
    assert "publish_1  node editor: publish needs approval" in shown.output
    history = cli("graph", "history", execution_id, "--json")
    assert history.exit_code == 0, history.output
    items = [json.loads(line) for line in history.output.splitlines()]
    assert [(i["kind"], i["finished"]) for i in items if i["kind"] == "node"][:1] == [
        ("node", ["outline@0"])
    ]
    assert {tuple(i["finished"]) for i in items} >= {("draft@0",)}


def test_resume_approves_the_call_and_completes(store: str) -> None:
    execution_id = _suspended(store)
    result = cli(
        "graph",
        "resume",
        execution_id,
        "--graph",
        EXAMPLE,
        "--approve",
        "publish_1",
        "--store",
        store,
        "--plain",
    )
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert not any("outline" in line for line in lines)  # finished before: not run again
    assert "■ review completed" in lines
    assert lines[-1].startswith('output: {"editor": "Published after review: ')
    again = cli("graph", "resume", execution_id, "--graph", EXAMPLE, "--store", store, "--plain")
    assert again.exit_code == 0, again.output  # ended: its recorded result, nothing runs
    assert again.output.startswith("output: ")


def test_runs_resume_resumes_a_graph_execution(store: str) -> None:
    execution_id = _suspended(store)
    result = cli(
        "runs",
        "resume",
        execution_id,
        "--agent",
        EXAMPLE,
        "--approve",
        "publish_1",
        "--store",
        store,
    )
    assert result.exit_code == 0, result.output
    assert "review completed" in result.output


def test_fork_from_a_checkpoint_with_an_edited_output(store: str) -> None:
    execution_id = _suspended(store)
    items = [
        json.loads(line)
        for line in cli("graph", "history", execution_id, "--json").output.splitlines()
    ]
    version = next(i["version"] for i in items if i["finished"] == ["draft@0"])
    forked = cli("graph", "fork", execution_id, "--at", str(version), "--set", "draft=Short.")
    assert forked.exit_code == 0, forked.output
    fork_id = forked.output.strip()
    assert fork_id.startswith("gx_")
    assert fork_id != execution_id
    first = cli("graph", "resume", fork_id, "--graph", EXAMPLE, "--store", store, "--plain")
    assert first.exit_code == 1, first.output  # the editor waits for approval again
    assert not any("sections" in line for line in first.output.splitlines())  # kept
    assert f"Execution {fork_id} is waiting for:" in first.output
    result = cli(
        "graph",
        "resume",
        fork_id,
        "--graph",
        EXAMPLE,
        "--approve",
        "publish_1",
        "--store",
        store,
        "--plain",
    )
    assert result.exit_code == 0, result.output
    assert "6 characters live" in result.output  # the editor published the edited draft


def test_usage_errors_are_one_line_without_a_traceback(store: str) -> None:
    execution_id = _suspended(store)
    cases = [
        (("graph", "show", "gx_nope"), "No graph execution 'gx_nope'"),
        (
            ("graph", "resume", execution_id, "--graph", EXAMPLE, "--store", store),
            "waiting for a decision on",
        ),
        (
            (
                "graph",
                "resume",
                execution_id,
                "--graph",
                EXAMPLE,
                "--store",
                store,
                "--approve",
                "x",
            ),
            "does not wait for 'x'",
        ),
        (("graph", "fork", execution_id, "--at", "999"), "no checkpoint at version 999"),
        (("graph", "fork", execution_id, "--set", "nope=1"), "Cannot edit node 'nope'"),
        (("graph", "run", "examples/missing.py:graph"), "error:"),
    ]
    for args, message in cases:
        result = cli(*args)
        assert result.exit_code == 2, (args, result.output)
        assert message in result.output, (args, result.output)
        assert "Traceback" not in result.output
