"""Run takeover: two real ``bastion serve`` processes on one store; one is killed mid-run."""

from __future__ import annotations

import asyncio
import os
import re
import signal
import sys
from collections.abc import AsyncGenerator, AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from ._agents import Sse, ids, parse_sse

ROOT = Path(__file__).parents[2]


@asynccontextmanager
async def _server(
    store_url: str, calls: Path, *, hang: bool
) -> AsyncGenerator[tuple[asyncio.subprocess.Process, httpx.AsyncClient]]:
    """``bastion serve`` of the relay agent (2 s leases, scans every 0.2 s), and a client."""
    env = {
        **os.environ,
        "BASTION_TEST_CALLS": str(calls),
        "BASTION_TEST_HANG": "1" if hang else "0",
    }
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bastion.cli", "serve", "tests/server/_takeover_agents.py:relay",
        "--store", store_url, "--port", "0", "--drain-timeout", "1",
        "--lease-ttl", "2", "--takeover-interval", "0.2",
        cwd=ROOT, env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        port = await asyncio.wait_for(_port_of(process), timeout=60)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            yield process, http
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()


async def _port_of(process: asyncio.subprocess.Process) -> int:
    assert process.stderr is not None
    while line := (await process.stderr.readline()).decode():
        found = re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", line)
        if found:
            return int(found.group(1))
    raise AssertionError("the server exited before it listened")


async def _until_step_2(events: AsyncIterator[Sse], seen: list[Sse]) -> None:
    async for sse in events:
        seen.append(sse)
        if sse.event == "step.start" and sse.data["step"] == 2:
            return
    raise AssertionError(f"the stream ended before step 2: {[e.event for e in seen]}")


async def test_a_survivor_takes_over_the_run_of_a_killed_server(
    store_url: str, tmp_path: Path
) -> None:
    calls = tmp_path / "calls.txt"
    async with (
        _server(store_url, calls, hang=True) as (doomed, there),
        _server(store_url, calls, hang=False) as (survivor, here),
    ):
        started = await there.post("/runs", json={"input": "Save the draft"})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]
        async with there.stream("GET", f"/runs/{run_id}/events") as response:
            await _until_step_2(parse_sse(response.aiter_lines()), [])  # the 2nd call hangs

        seen: list[Sse] = []
        async with asyncio.timeout(90), here.stream("GET", f"/runs/{run_id}/events") as response:
            events = parse_sse(response.aiter_lines())
            await _until_step_2(events, seen)  # read from the store, logged by the doomed
            doomed.kill()  # SIGKILL: no drain, no lease release
            await doomed.wait()
            seen.extend([sse async for sse in events])  # the same stream, continued

        assert seen[-1].event == "agent.end"
        assert seen[-1].data["status"] == "completed"
        assert ids(seen) == list(range(1, len(seen) + 1))
        view = (await here.get(f"/runs/{run_id}")).json()
        assert (view["status"], view["output"]) == ("completed", "Saved and done.")
        lines = calls.read_text(encoding="utf-8").splitlines()
        assert [line.split()[0] for line in lines] == ["model-1", "save", "model-2", "model-2"]
        pids = [int(line.split()[1]) for line in lines]
        assert pids[:3] == [doomed.pid] * 3  # the model's first answer and the tool: once
        assert pids[3] == survivor.pid  # the unanswered call is sent again by the survivor


def test_bad_takeover_settings_are_refused_before_anything_opens(tmp_path: Path) -> None:
    from bastion.core import UserError
    from bastion.server import create_app

    from ._agents import mailer

    store = f"sqlite:///{tmp_path / 'never.db'}"
    with pytest.raises(UserError, match="takeover_interval"):
        create_app(mailer(), store=store, takeover_interval=0)
    with pytest.raises(UserError, match="lease_ttl"):
        create_app(mailer(), store=store, lease_ttl=-1.0)
    assert not (tmp_path / "never.db").exists()


async def test_a_live_owners_run_is_not_taken_over(tmp_path: Path) -> None:
    from bastion.server import create_app
    from bastion.server._service import Service
    from bastion.server._takeover import orphans, take_over

    from ._agents import mailer, read_sse
    from .conftest import running
    from .test_uvicorn import serving

    store = f"sqlite:///{tmp_path / 'runs.db'}"
    gate = asyncio.Event()
    owner = create_app(mailer(gate), store=store, takeover_interval=None)
    other = create_app(mailer(), store=store, takeover_interval=None)
    async with serving(owner) as http, running(other):
        run_id = (await http.post("/runs", json={"input": "Mail Bob"})).json()["run_id"]
        async with http.stream("GET", f"/runs/{run_id}/events") as response:
            await read_sse(response, stop_after="tool.execute.start")  # waiting on the gate
        survivor = other.state.bastion
        assert isinstance(survivor, Service)
        assert await orphans(survivor.manager) == []  # the owner's lease is live
        assert not await take_over(survivor.manager, run_id)  # RunBusy: left alone
        assert run_id not in survivor.manager.live
        gate.set()
        async with http.stream("GET", f"/runs/{run_id}/events") as response:
            events = await read_sse(response)
        assert events[-1].data["status"] == "awaiting_approval"  # the owner went on
