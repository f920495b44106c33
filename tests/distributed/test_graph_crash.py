"""A worker killed with SIGKILL mid-graph is replaced by another that finishes it.

Real processes on a real dev server: the worker runs the ``crashy`` graph from
``_graphs.py``; each node's runs are counted in files.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
from temporalio.testing import WorkflowEnvironment

from ._graphs import crash_graph
from .test_worker_crash import _count, _line  # pyright: ignore[reportPrivateUsage]

WORKER = Path(__file__).with_name("_graph_worker.py")


@asynccontextmanager
async def _worker(address: str, workdir: Path) -> AsyncGenerator[asyncio.subprocess.Process]:
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(WORKER),
        address,
        str(workdir),
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


@pytest.mark.timeout(180)  # real processes and a dev server on a shared machine
async def test_a_killed_worker_is_replaced_and_no_finished_node_runs_again(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    remote = crash_graph(tmp_path)
    async with _worker(address, tmp_path) as first:
        handle = await remote.start(client, 4)
        await _line(first, "SLOW_STARTED")  # worker 1 is inside the second node
        first.send_signal(signal.SIGKILL)
        assert await first.wait() == -signal.SIGKILL
    assert [_count(tmp_path / n) for n in ("first", "slow", "last")] == [1, 1, 0]
    async with _worker(address, tmp_path):
        result = await remote.result(client, handle.id)
        status = await remote.status(client, handle.id)
    assert (result.status, result.output) == ("completed", "result 50")
    # the finished node was answered from the history; only the lost one ran again
    assert [_count(tmp_path / n) for n in ("first", "slow", "last")] == [1, 2, 1]
    assert status.nodes == {"first@0": "finished", "slow@0": "finished", "last@0": "finished"}
