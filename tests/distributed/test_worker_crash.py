"""A worker killed with SIGKILL mid-run is replaced by another that finishes the run.

Real processes on a real dev server: the worker runs the ``charger`` agent from
``_agents.py``; its model calls and its side-effecting ``charge`` runs are counted in files.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from bastion.tools import ApprovalDecision

from ._agents import crash_agent

WORKER = Path(__file__).with_name("_worker.py")


@asynccontextmanager
async def _worker(
    address: str,
    workdir: Path,
    kind: str = "side_effecting",
    block: str = "tool",
    *,
    script: Path = WORKER,
) -> AsyncGenerator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(script),
        address,
        str(workdir),
        kind,
        block,
        stdout=asyncio.subprocess.PIPE,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    try:
        await _line(process, "WORKER_READY")
        yield process
    finally:
        if process.returncode is None:
            process.kill()
        await process.wait()


async def _line(process: asyncio.subprocess.Process, expected: str) -> None:
    """Read the worker's output until ``expected`` (fail if the worker exits first)."""
    assert process.stdout is not None
    while True:
        line = await process.stdout.readline()
        assert line, f"the worker exited (rc {await process.wait()}) before {expected!r}"
        if line.decode().strip() == expected:
            return


async def _kill_at(process: asyncio.subprocess.Process, line: str) -> None:
    """Kill the worker with SIGKILL once it printed ``line`` (it is inside that call)."""
    await _line(process, line)
    process.send_signal(signal.SIGKILL)
    assert await process.wait() == -signal.SIGKILL


def _count(path: Path) -> int:
    return int(path.read_text()) if path.exists() else 0


async def test_a_killed_worker_is_replaced_without_a_repeated_model_call_or_side_effect(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    remote_agent = crash_agent(tmp_path)
    async with _worker(address, tmp_path) as first:
        handle = await remote_agent.start(client, "Charge 5")
        await _kill_at(first, "CHARGE_STARTED")  # worker 1 is inside the side-effecting call
    assert (_count(tmp_path / "model_calls"), _count(tmp_path / "charges")) == (1, 1)
    async with _worker(address, tmp_path):
        # the call that may have happened is held for a person, as the local ledger does
        parked = await remote_agent.settle(client, handle.id)
        assert parked.status == "awaiting_approval"
        [held] = parked.pending
        assert held.tool_name == "charge"
        assert held.input is not None
        assert "Outcome unknown" in held.input.message
        assert "'side_effecting' without an idempotency key" in held.input.message
        # a person knows it went through: the call is marked done, nothing runs again
        decision = ApprovalDecision(tool_call_id=held.tool_call_id, granted=True, result="ok")
        await remote_agent.decide(client, handle.id, decision)
        result = await remote_agent.result(client, handle.id)
    assert (result.status, result.output) == ("completed", "charge result: ok")
    # one more model call after the decision; the first step's call was never sent again
    assert _count(tmp_path / "model_calls") == 2
    assert _count(tmp_path / "charges") == 1


async def test_a_read_only_call_whose_worker_was_killed_runs_again_on_the_next_worker(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    remote_agent = crash_agent(tmp_path, "read_only")
    async with _worker(address, tmp_path, "read_only") as first:
        handle = await remote_agent.start(client, "Charge 5")
        await _kill_at(first, "CHARGE_STARTED")
    async with _worker(address, tmp_path, "read_only"):
        result = await remote_agent.result(client, handle.id)
    assert (result.status, result.output) == ("completed", "charge result: charged 5")
    # a read-only call may run again: its activity is retried on the second worker
    assert _count(tmp_path / "charges") == 2
    assert _count(tmp_path / "model_calls") == 2


async def test_a_model_call_whose_worker_was_killed_is_sent_again_by_the_next_worker(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    remote_agent = crash_agent(tmp_path, "side_effecting", block="model")
    async with _worker(address, tmp_path, "side_effecting", "model") as first:
        handle = await remote_agent.start(client, "Charge 5")
        await _kill_at(first, "MODEL_STARTED")  # worker 1 is inside the first model call
    async with _worker(address, tmp_path, "side_effecting", "model"):
        result = await remote_agent.result(client, handle.id)
    assert (result.status, result.output) == ("completed", "charge result: charged 5")
    # the lost call never answered, so it is sent again (as a journal without its response
    # would); then the tool runs once and the answer is one more call
    assert (_count(tmp_path / "model_calls"), _count(tmp_path / "charges")) == (3, 1)
