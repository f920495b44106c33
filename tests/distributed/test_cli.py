"""``bastion worker``, ``bastion run --temporal`` and ``runs resume --temporal`` as processes.

A real dev server; the worker and each command are real ``bastion`` subprocesses.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Generator
from contextlib import contextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from bastion.distributed import TemporalAgent

from ._agents import mailer

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/distributed/_agents.py:served"
BASTION = [sys.executable, "-m", "bastion.cli"]


def _bastion(*args: str, temporal: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if k != "BASTION_TEMPORAL"}
    if temporal is not None:  # the one change of configuration: the variable
        env["BASTION_TEMPORAL"] = temporal
    return subprocess.run(
        [*BASTION, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


async def _run(*args: str, temporal: str | None = None) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(lambda: _bastion(*args, temporal=temporal))


@contextmanager
def _worker(address: str, stop: signal.Signals) -> Generator[list[str]]:
    """A ``bastion worker`` process serving both agents; yields what it printed at the end."""
    process = subprocess.Popen(
        [*BASTION, "worker", SPEC, "--temporal", address],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert process.stdout is not None
    ready = [process.stdout.readline() for _ in range(2)]
    assert [line.split(" on queue")[0] for line in ready] == ["Serving adder", "Serving mailer"]
    printed: list[str] = []
    try:
        yield printed
    finally:
        process.send_signal(stop)
        out, err = process.communicate(timeout=60)
        printed += [*ready, out, err, str(process.returncode)]


def _address(env: WorkflowEnvironment) -> str:
    return env.client.service_client.config.target_host


@pytest.mark.timeout(240)  # real bastion processes: ~10 s each to start on a busy machine
async def test_a_worker_process_runs_what_bastion_run_temporal_starts(
    dev_server: WorkflowEnvironment,
) -> None:
    address = _address(dev_server)
    with _worker(address, signal.SIGTERM) as printed:
        # The same command as without Temporal, with BASTION_TEMPORAL set.
        done = await _run(
            "run", SPEC.replace("served", "adder"), "Add 2 and 3", "--plain", temporal=address
        )
        # A run left parked when the worker stops, and a workflow that does not exist.
        parked = await _run(
            "run", SPEC.replace("served", "mailer"), "Mail", "--json", temporal=address
        )
        unknown = await _run(
            "runs", "resume", "nope", "--agent", SPEC.replace("served", "adder"),
            "--approve", "call_1", temporal=address,
        )  # fmt: skip
    assert parked.returncode == 1, parked.stderr
    shown = json.loads(parked.stdout)
    assert (shown["type"], shown["status"]) == ("workflow_parked", "awaiting_approval")
    assert [p["tool_name"] for p in shown["pending"]] == ["send_email"]
    assert (unknown.returncode, unknown.stdout) == (2, "")
    assert "workflow not found" in unknown.stderr
    assert "Traceback" not in unknown.stderr + parked.stderr
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines()[0] == "The sum is 5."
    assert "completed · 2 model calls" in done.stdout
    *_, out, err, code = printed
    assert (code, out.splitlines()[-1]) == ("0", "Stopped.")
    assert "Traceback" not in err


@pytest.mark.timeout(240)  # real bastion processes: ~10 s each to start on a busy machine
async def test_a_parked_run_is_approved_from_the_cli(dev_server: WorkflowEnvironment) -> None:
    address = _address(dev_server)
    spec = SPEC.replace("served", "mailer")
    with _worker(address, signal.SIGINT) as printed:
        parked = await _run("run", spec, "Mail Bob", "--temporal", address, "--plain")
        assert parked.returncode == 1, parked.stderr
        lines = parked.stdout.splitlines()
        assert lines[0].startswith("Run mailer-")
        assert lines[0].endswith("waiting for a decision on:")
        workflow_id = lines[0].split()[1]
        call_id, call = lines[1].split(maxsplit=1)
        assert call.startswith("send_email(")
        command = lines[-1].split()
        assert command == [
            "bastion", "runs", "resume", workflow_id, "--agent", spec,
            "--temporal", address, "--approve", call_id,
        ]  # fmt: skip
        refused = await _run(*command[1:-1], "nope")
        assert refused.returncode == 2
        assert "nope" in refused.stderr
        assert "Traceback" not in refused.stderr
        approved = await _run(*command[1:], "--plain")
        assert approved.returncode == 0, approved.stderr
        assert approved.stdout.splitlines()[0] == "Done."
        again = await _run(*command[1:], "--plain")
        assert again.returncode == 2
        assert "Traceback" not in again.stderr

        second = await _run("run", spec, "Mail Bob", "--temporal", address, "--plain")
        second_id = second.stdout.splitlines()[0].split()[1]
        cancel = ["runs", "cancel", second_id, "--agent", spec, "--temporal", address, "--plain"]
        cancelled = await _run(*cancel)
        assert cancelled.returncode == 0, cancelled.stderr
        assert "run aborted: The run was aborted." in cancelled.stderr
        assert f"{second_id} · aborted" in cancelled.stdout
    # What another client sees: the workflow completed after the approved call ran.
    result = await TemporalAgent(mailer()).result(dev_server.client, workflow_id)
    assert (result.status, result.steps) == ("completed", 2)
    aborted = await TemporalAgent(mailer()).result(dev_server.client, second_id)
    assert (aborted.status, aborted.steps) == ("aborted", 1)  # the email was never sent
    *_, out, err, code = printed
    assert (code, out.splitlines()[-1]) == ("0", "Stopped.")
    assert "Traceback" not in err


@pytest.mark.timeout(240)  # real bastion processes: ~10 s each to start on a busy machine
def test_usage_errors_exit_2_without_a_traceback() -> None:
    cases = [
        ("worker", "tests/distributed/_agents.py:nope", "--temporal", "127.0.0.1:1"),
        ("worker", SPEC),
        ("worker", "tests/distributed/_agents.py:add", "--temporal", "127.0.0.1:1"),
        ("run", SPEC, "hi", "--temporal", "127.0.0.1:1"),
        ("run", SPEC.replace("served", "adder"), "hi", "--task-queue", "q"),
        ("run", SPEC.replace("served", "adder"), "hi", "--temporal", "127.0.0.1:1"),
        ("runs", "resume", "w", "--agent", SPEC.replace("served", "adder"), "--temporal", "x:1"),
        ("runs", "resume", "w", "--agent", SPEC, "--temporal", "x:1", "--raise", "i=3"),
        ("runs", "cancel", "w", "--agent", SPEC.replace("served", "adder")),
        ("runs", "cancel", "w", "--agent", SPEC.replace("served", "adder"), "--temporal", "x:1"),
    ]
    cases.append(("run", SPEC.replace("served", "adder"), "hi", "--model", "openai:gpt-4.1"))
    for args in cases:
        done = _bastion(*args, temporal="127.0.0.1:1" if args[-1] == "openai:gpt-4.1" else None)
        assert done.returncode == 2, (args, done.stdout, done.stderr)
        assert "Traceback" not in done.stderr, args
        assert "rror" in done.stderr, args
