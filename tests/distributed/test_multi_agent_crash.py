"""Multi-agent on a real dev server, in real processes.

A worker killed with SIGKILL during a fan-out is replaced by another that finishes it (the
children's model calls and side-effecting ``charge`` runs are counted in files, see
``_multi_agents.crash_fan_out``); the example of docs/scale-out.md runs as printed.
"""

from __future__ import annotations

import asyncio
import signal
from contextlib import AsyncExitStack
from pathlib import Path

from temporalio.testing import WorkflowEnvironment

from ._multi_agents import crash_fan_out
from .test_docs import run_example
from .test_worker_crash import (
    _count,  # pyright: ignore[reportPrivateUsage]
    _line,  # pyright: ignore[reportPrivateUsage]
    _worker,  # pyright: ignore[reportPrivateUsage]
)

WORKER = Path(__file__).with_name("_multi_worker.py")
PAGE = Path(__file__).parents[2] / "docs" / "scale-out.md"


async def test_a_worker_killed_during_a_fan_out_is_replaced_without_repeating_a_call(
    dev_server: WorkflowEnvironment, tmp_path: Path
) -> None:
    client = dev_server.client
    address = client.service_client.config.target_host
    host = crash_fan_out(tmp_path)
    children = [(host.reach[name], f"work, {name}") for name in ("alpha", "beta", "gamma")]
    async with AsyncExitStack() as stack:
        # two workers from the start (each takes seconds to start); whichever runs the
        # lookup is killed in it, and the other finishes the fan-out
        workers = await asyncio.gather(
            *(stack.enter_async_context(_worker(address, tmp_path, script=WORKER)) for _ in "12")
        )
        # one child at a time: alpha and beta have ended when gamma looks the price up
        handle = await host.start_fan_out(
            client, children, max_concurrent_children=1, fan_out_id="crash-fan"
        )
        waits = {asyncio.ensure_future(_line(w, "LOOKUP_STARTED")): w for w in workers}
        done, pending = await asyncio.wait(waits, return_when=asyncio.FIRST_COMPLETED)
        for wait in pending:
            wait.cancel()
        [killed] = [waits[wait] for wait in done]
        killed.send_signal(signal.SIGKILL)
        assert await killed.wait() == -signal.SIGKILL
        result = await host.fan_out_result(client, handle.id)
    assert result.ok
    assert result.output == "alpha: charged alpha\n\nbeta: charged beta\n\ngamma: charged gamma"
    # every model call and every charge happened once; only the read-only lookup, whose
    # worker was lost, ran again
    names = ("alpha", "beta", "gamma")
    calls = {name: _count(tmp_path / f"model_calls_{name}") for name in names}
    charges = {name: _count(tmp_path / f"charges_{name}") for name in names}
    assert calls == {"alpha": 2, "beta": 2, "gamma": 3}
    assert charges == {"alpha": 1, "beta": 1, "gamma": 1}
    assert _count(tmp_path / "lookups") == 2
    assert result.usage.requests == 7


def test_the_multi_agent_example_of_the_scale_out_page_prints_what_it_shows(
    tmp_path: Path,
) -> None:
    section = PAGE.read_text(encoding="utf-8").split("## Multi-agent on Temporal", 1)[1]
    run_example(section, tmp_path)  # in this process: see run_example
