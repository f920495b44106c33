"""The server under a real uvicorn, over TCP: live SSE, reconnection, approval, completion."""

from __future__ import annotations

import asyncio
import socket
from collections.abc import AsyncGenerator
from contextlib import asynccontextmanager

import httpx
import uvicorn
from fastapi import FastAPI

from bastion.server import create_app

from ._agents import SENT, Sse, ids, mailer, parse_sse

TOKENS = {"secret-a": "acme"}


@asynccontextmanager
async def serving(app: FastAPI) -> AsyncGenerator[httpx.AsyncClient]:
    """``app`` under uvicorn on a free port, and a client of it."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)  # connections wait in the backlog until uvicorn accepts them
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on")
    server = uvicorn.Server(config)
    task = asyncio.create_task(server.serve(sockets=[sock]))
    headers = {"Authorization": "Bearer secret-a"}
    try:
        async with httpx.AsyncClient(
            base_url=f"http://127.0.0.1:{port}", headers=headers, timeout=20
        ) as http:
            yield http
    finally:
        server.should_exit = True
        await task
        sock.close()


async def _stream(
    http: httpx.AsyncClient, run_id: str, after: int | None = None, stop_after: str | None = None
) -> list[Sse]:
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    found: list[Sse] = []
    async with http.stream("GET", f"/runs/{run_id}/events", headers=headers) as response:
        assert response.status_code == 200
        async for sse in parse_sse(response.aiter_lines()):
            found.append(sse)
            if sse.event == stop_after:
                break  # the client goes away mid-run
    return found


async def test_live_stream_reconnect_approve_finish_over_uvicorn(store_url: str) -> None:
    # covers G-07
    SENT.clear()
    gate = asyncio.Event()
    app = create_app(mailer(gate), store=store_url, auth=TOKENS)
    async with serving(app) as http:
        started = await http.post("/runs", json={"input": "Mail Bob"})
        assert started.status_code == 202, started.text
        run_id = started.json()["run_id"]

        # Live: the look-up waits on the gate, so these arrive while the run is in flight.
        head = await _stream(http, run_id, stop_after="tool.execute.start")
        assert head[-1].data["tool_name"] == "look_up"
        assert (await http.get(f"/runs/{run_id}")).json()["status"] == "running"

        # Reconnect from the middle of what was seen, then let the run go on live.
        middle = head[len(head) // 2].id
        follower = asyncio.create_task(_stream(http, run_id, after=middle))
        gate.set()
        tail = await follower
        assert tail[: len(head) - middle] == head[middle:]
        assert tail[-1].event == "agent.end"
        assert tail[-1].data["status"] == "awaiting_approval"
        seen = head[:middle] + tail
        assert ids(seen) == list(range(1, len(seen) + 1))
        assert await _stream(http, run_id) == seen  # replayed whole from the store

        pending = (await http.get(f"/runs/{run_id}/approvals")).json()
        assert [p["tool_name"] for p in pending] == ["send_email"]
        approved = await http.post(f"/runs/{run_id}/approvals/{pending[0]['id']}/approve", json={})
        assert approved.status_code == 202
        rest = await _stream(http, run_id, after=seen[-1].id)
        assert ids(seen + rest) == list(range(1, len(seen) + len(rest) + 1))
        assert [e.event for e in rest if e.event.startswith("tool.execute")] == [
            "tool.execute.start",
            "tool.execute.end",
        ]
        assert rest[-1].data["status"] == "completed"

        view = (await http.get(f"/runs/{run_id}")).json()
        assert (view["status"], view["output"]) == ("completed", "Done: sent to bob@example.com")
        assert SENT == ["bob@example.com"]
