"""A graph execution started on one ``bastion serve`` process, followed live from another."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx
import pytest

from ._agents import Sse, ids, parse_sse
from .test_takeover import _port_of  # pyright: ignore[reportPrivateUsage]

ROOT = Path(__file__).parents[2]


@asynccontextmanager
async def _servers(store_url: str, gate: Path) -> AsyncGenerator[list[httpx.AsyncClient]]:
    """Two ``bastion serve --graph`` processes of the relay graph on one store, started
    together, and a client of each."""
    env = {**os.environ, "BASTION_TEST_GATE": str(gate)}
    command = [
        sys.executable, "-m", "bastion.cli", "serve", "--graph",
        "tests/server/_follow_graphs.py:relay", "--store", store_url, "--port", "0",
        "--takeover-interval", "0", "--drain-timeout", "1",
    ]  # fmt: skip
    processes = [
        await asyncio.create_subprocess_exec(
            *command, cwd=ROOT, env=env, stderr=asyncio.subprocess.PIPE
        )
        for _ in range(2)
    ]
    try:
        ports = await asyncio.wait_for(asyncio.gather(*map(_port_of, processes)), timeout=120)
        async with contextlib.AsyncExitStack() as stack:
            yield [
                await stack.enter_async_context(
                    httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60)
                )
                for port in ports
            ]
    finally:
        for process in processes:
            if process.returncode is None:
                process.send_signal(signal.SIGTERM)
        await asyncio.gather(*(process.wait() for process in processes))


async def _read(http: httpx.AsyncClient, execution: str, after: int, stop: str) -> list[Sse]:
    """The execution's signals after ``after``, up to the first ``stop`` (or the end)."""
    found: list[Sse] = []
    headers = {"Last-Event-ID": str(after)} if after else {}
    async with http.stream("GET", f"/executions/{execution}/events", headers=headers) as body:
        assert body.status_code == 200
        async for sse in parse_sse(body.aiter_lines()):
            found.append(sse)
            if sse.event == stop:
                break
    return found


@pytest.mark.timeout(180)  # two real server processes: ~10 s a backend, 30 under load
async def test_an_execution_running_on_a_is_followed_live_from_b(
    store_url: str, tmp_path: Path
) -> None:
    # covers G-07
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    async with _servers(store_url, gate) as (a, b):
        started = await a.post("/graphs/relay/executions", json={"input": "x"})
        assert started.status_code == 202, started.text
        execution = started.json()["execution_id"]
        async with asyncio.timeout(90):
            # B sees what A logs while A's `hold` waits: it is live, not a finished log.
            first = await _read(b, execution, 0, stop="node.before")
            first += await _read(b, execution, first[-1].id, stop="node.before")
            assert [(e.event, e.data.get("node_key")) for e in first] == [
                ("graph.before", ""), ("node.before", "plan"), ("node.after", "plan"),
                ("node.before", "hold"),
            ]  # fmt: skip
            assert (await b.get(f"/executions/{execution}")).json()["status"] == "running"
            follower = asyncio.create_task(_read(b, execution, first[-1].id, stop="graph.after"))
            await asyncio.to_thread(gate.write_text, "let go\n", encoding="utf-8")
            rest = await follower
        events = first + rest
        assert ids(events) == list(range(1, len(events) + 1))
        assert [e.event for e in rest] == ["node.after", "node.before", "node.after", "graph.after"]
        assert rest[-1].data["output"] == "plan for x, let go, done"
        view = (await b.get(f"/executions/{execution}")).json()
        assert (view["status"], view["output"]) == ("completed", "plan for x, let go, done")
