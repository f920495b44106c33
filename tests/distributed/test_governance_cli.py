"""``bastion runs resume --temporal --raise``: a parked budget raised from the command line.

A real dev server; the worker and each command are real ``bastion`` subprocesses; the
counters live in a SQLite file both see.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from ._governed import COUNTERS_ENV

ROOT = Path(__file__).resolve().parents[2]
SPEC = "tests/distributed/_governed.py:cli_spender"
BASTION = [sys.executable, "-m", "bastion.cli"]


async def _bastion(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return await asyncio.to_thread(
        subprocess.run,
        [*BASTION, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        env=env,
    )


@pytest.mark.timeout(180)  # four command processes on a shared 2-core machine
async def test_a_parked_budget_is_raised_from_the_cli(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    address = dev_server.client.service_client.config.target_host
    env = {**os.environ, COUNTERS_ENV: f"sqlite:///{tmp_path / 'counters.db'}"}
    env.pop("BASTION_TEMPORAL", None)
    worker = subprocess.Popen(  # noqa: ASYNC220 (read line by line below, as test_cli does)
        [*BASTION, "worker", SPEC, "--temporal", address],
        cwd=ROOT,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert worker.stdout is not None
        assert worker.stdout.readline().startswith("Serving spender on queue")
        parked = await _bastion(env, "run", SPEC, "Tea?", "--temporal", address, "--plain")
        assert parked.returncode == 1, parked.stderr
        lines = parked.stdout.splitlines()
        workflow_id = lines[0].split()[1]
        interrupt_id, limit = lines[1].split(maxsplit=1)
        assert limit.startswith("llm cost per day: 0.6 of max 0.5  [interrupt]")
        command = lines[-1].split()
        assert command[-2:] == ["--raise", f"{interrupt_id}=MAX"]
        resume = ["runs", "resume", workflow_id, "--agent", SPEC, "--temporal", address]

        unknown = await _bastion(env, *resume, "--raise", "int_x=2")
        assert unknown.returncode == 2
        assert (
            f"'int_x' is not a pending budget interrupt of the run (pending: '{interrupt_id}')"
            in (unknown.stderr)
        )
        raised = await _bastion(env, *resume, "--raise", f"{interrupt_id}=2", "--json")
        assert raised.returncode == 0, raised.stderr
        end = json.loads(raised.stdout)
        assert (end["type"], end["status"], end["output"]) == (
            "workflow_end",
            "completed",
            "Tea is in stock.",
        )
        assert end["usage"]["cost_usd"] == 1.2
        assert "Traceback" not in unknown.stderr + raised.stderr + parked.stderr
    finally:
        worker.send_signal(signal.SIGTERM)
        worker.communicate(timeout=60)
