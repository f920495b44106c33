"""A graph execution started on one ``bastion serve`` process, followed live from another."""

from __future__ import annotations

import asyncio
import os
import signal
import sys
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager
from pathlib import Path

import httpx

from ._agents import Sse, ids, parse_sse
from .test_takeover import _port_of  # pyright: ignore[reportPrivateUsage]

ROOT = Path(__file__).parents[2]


@asynccontextmanager
async def _server(store_url: str, gate: Path) -> AsyncGenerator[httpx.AsyncClient]:
    """``bastion serve --graph`` of the relay graph on ``store_url``, and a client of it."""
    env = {**os.environ, "BASTION_TEST_GATE": str(gate)}
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bastion.cli", "serve", "--graph",
        "tests/server/_follow_graphs.py:relay", "--store", store_url, "--port", "0",
        "--takeover-interval", "0", "--drain-timeout", "1",
        cwd=ROOT, env=env, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        port = await asyncio.wait_for(_port_of(process), timeout=60)
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=60) as http:
            yield http
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()


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


async def test_an_execution_running_on_a_is_followed_live_from_b(
    store_url: str, tmp_path: Path
) -> None:
    # covers G-07
    gate = tmp_path / "gate"
    os.mkfifo(gate)
    async with _server(store_url, gate) as a, _server(store_url, gate) as b:
        started = await a.post("/graphs/relay/executions", json={"input": "x"})
        assert started.status_code == 202, started.text
        execution = started.json()["execution_id"]
        async with asyncio.timeout(60):
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
