"""``bastion run --temporal`` prints a run's events as a local ``bastion run`` does."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

ROOT = Path(__file__).resolve().parents[2]
AGENTS = "tests/distributed/_event_agents.py"
SPEC = f"{AGENTS}:stored_adder"
MAILER = f"{AGENTS}:stored_mailer"
BASTION = [sys.executable, "-m", "bastion.cli"]


def _env(store: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "BASTION_TEMPORAL"}
    return {**env, "BASTION_STORE": store}


@contextmanager
def _worker(address: str, store: str) -> Generator[None]:
    process = subprocess.Popen(
        [*BASTION, "worker", f"{AGENTS}:served", "--temporal", address],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=_env(store),
    )  # fmt: skip
    assert process.stdout is not None
    try:
        assert process.stdout.readline().startswith("Serving adder")
        assert process.stdout.readline().startswith("Serving mailer")
        yield
    finally:
        process.kill()
        process.communicate(timeout=60)


async def _run(*args: str, store: str) -> subprocess.CompletedProcess[str]:
    command, env = [*BASTION, *args], _env(store)
    return await asyncio.to_thread(
        lambda: subprocess.run(
            command, cwd=ROOT, capture_output=True, text=True, timeout=120, check=False, env=env
        )
    )


def _steady(lines: list[str]) -> list[str]:
    """The lines without their timings (the last word of tool rows and the summary)."""
    return [line.rsplit(" · ", 1)[0] if line.startswith("✓ completed") else line for line in lines]


@pytest.mark.timeout(180)  # real processes on a shared machine
async def test_bastion_run_temporal_prints_the_events_as_a_local_run(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    address = dev_server.client.service_client.config.target_host
    store = f"sqlite:///{tmp_path}/bastion.db"
    local = await _run("run", SPEC, "Add 2 and 3", "--plain", store=store)
    with _worker(address, store):
        remote = await _run(
            "run", SPEC, "Add 2 and 3", "--plain", "--temporal", address, store=store
        )
        lines = await _run("run", SPEC, "Add 2 and 3", "--json", "--temporal", address, store=store)
    assert (local.returncode, remote.returncode, lines.returncode) == (0, 0, 0), remote.stderr
    shown = remote.stdout.splitlines()
    *events, workflow = shown
    assert [_untimed(line) for line in _steady(events)] == [
        _untimed(line) for line in _steady(local.stdout.splitlines())
    ]
    assert "The sum is 5." in events
    assert workflow.startswith("adder-")
    assert " · completed · 2 model calls" in workflow
    *event_lines, end = [json.loads(line) for line in lines.stdout.splitlines()]
    assert [e["seq"] for e in event_lines] == list(range(1, len(event_lines) + 1))
    assert (event_lines[0]["type"], event_lines[-1]["type"]) == ("agent.start", "agent.end")
    assert (end["type"], end["status"]) == ("workflow_end", "completed")


def _untimed(line: str) -> str:
    """A tool row without its duration (``✓ add(a=2, b=3) 3.8 ms → 5``)."""
    head, arrow, tail = line.partition(" → ")
    return head.rsplit(" ", 2)[0] + arrow + tail if arrow else line


@pytest.mark.timeout(180)  # real processes on a shared machine
async def test_a_parked_run_and_its_resumption_print_their_events(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    address = dev_server.client.service_client.config.target_host
    store = f"sqlite:///{tmp_path}/bastion.db"
    with _worker(address, store):
        parked = await _run(
            "run", MAILER, "Mail Bob", "--plain", "--temporal", address, store=store
        )
        lines = parked.stdout.splitlines()
        waiting = next(i for i, line in enumerate(lines) if line.startswith("Run mailer-"))
        workflow_id = lines[waiting].split()[1]
        call_id = lines[waiting + 1].split()[0]
        resumed = await _run(
            "runs", "resume", workflow_id, "--agent", MAILER, "--approve", call_id,
            "--temporal", address, "--plain", store=store,
        )  # fmt: skip
    assert parked.returncode == 1, parked.stderr
    assert any(line.startswith("⏸ awaiting_approval") for line in lines[:waiting])
    assert resumed.returncode == 0, resumed.stderr
    shown = resumed.stdout.splitlines()
    assert "Done." in shown  # the resumed run's answer, from its events
    assert any(line.startswith("✓ completed") for line in shown)
    assert shown[-1].startswith(f"{workflow_id} · completed")
