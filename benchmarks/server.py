"""S11: one server process, many concurrent streaming runs, each followed over SSE.

``python -m benchmarks.server [memory sqlite postgres redis]`` (default ``memory``) runs, for
each backend and for ``--streams`` (1,000) and ``--compare`` (100) runs, a fresh process
that serves one agent with :func:`bastion.server.create_app` under uvicorn (on a free TCP
port) and drives it from httpx clients on the same event loop, one client (one connection)
per stream. The backend name ``fastapi+pydantic-ai`` serves the same agent from the peer, a
minimal FastAPI + pydantic-ai app (:mod:`benchmarks.server_peer`), driven the same way:

1. every client starts a run (``POST /runs``) and opens its SSE stream; each run's first
   tool waits on one shared gate, so every stream is connected before the work is timed;
2. the gate opens: every run finishes its tool, then streams a ``--deltas`` (50) word
   answer from a zero-latency scripted model.

Figures: wall time from the gate to the last ``agent.end`` received; events delivered per
second; **event latency** p50 / p99, from the moment the server has written an event's
batch to the store (when it hands the batch to its followers) to the client parsing that
event off the socket, for every event after the gate; CPU per run; peak RSS. Clients and
server share the process and its one core, so the latency includes waiting for the
clients' own work: an upper bound of the server's.

Every stream is checked: ids 1..n without a gap or repeat, the last event an ``agent.end``
``completed``, and the answer's text equal to the script's.
``python -m benchmarks.server --child memory 1000 50`` prints one measurement as JSON.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gc
import json
import socket
import ssl
import subprocess
import sys
import time
from dataclasses import asdict, dataclass
from typing import Any

import httpx
import psutil
import uvicorn
from starlette.types import ASGIApp

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.server import LoggedEvent, create_app
from bastion.server._events import Hub
from bastion.testing import Call, FunctionModel, Turn

from .s4 import _peak_rss
from .server_peer import PeerStamps, peer_app
from .sessions import ROOT
from .stores import _backend, _pct

STREAMS = 1_000
COMPARE = 100
DELTAS = 50


def _agent(gate: asyncio.Event, n: int, deltas: int) -> Agent[None, str]:
    @tool(side_effect_class="read_only")
    async def wait_for_go() -> str:
        """Wait until every stream is connected."""
        await gate.wait()
        return "go"

    answer = [f"w{i} " for i in range(deltas)]

    def turn(request: ModelRequest) -> Turn:  # zero latency; each run its own two turns
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(text=answer)
        return Turn(tool_calls=[Call("wait_for_go")])

    return Agent("bench", model=FunctionModel(turn), tools=[wait_for_go])


class _StampedHub(Hub):
    """A hub that notes when each (run, seq) went to followers: right after its write."""

    def __init__(self) -> None:
        super().__init__()
        self.at: dict[tuple[str, int], float] = {}

    def publish(self, run_id: str, batch: list[LoggedEvent]) -> None:
        now = time.perf_counter()
        for event in batch:
            self.at[run_id, event.seq] = now
        super().publish(run_id, batch)


@dataclass(frozen=True, kw_only=True, slots=True)
class _Seen:
    run_id: str
    events: list[tuple[int, str, float, str]]  # seq, type, received at, delta
    status: str


async def _client(
    http: httpx.AsyncClient, connected: list[int], n: int, ready: asyncio.Event
) -> _Seen:
    try:
        return await _follow(http, connected, n, ready)
    except BaseException:
        ready.set()  # the gather below raises it instead of waiting for the others
        raise


async def _follow(
    http: httpx.AsyncClient, connected: list[int], n: int, ready: asyncio.Event
) -> _Seen:
    started = await http.post("/runs", json={"input": "go"})
    run_id = started.json()["run_id"]
    seen: list[tuple[int, str, float, str]] = []
    async with http.stream("GET", f"/runs/{run_id}/events") as response:
        connected.append(1)
        if len(connected) == n:
            ready.set()
        seq, kind, status = 0, "", ""
        async for line in response.aiter_lines():
            if line.startswith("id: "):
                seq = int(line[4:])
            elif line.startswith("event: "):
                kind = line[7:]
            elif line.startswith("data: "):
                at = time.perf_counter()
                data = json.loads(line[6:])
                status = data.get("status", status) if kind == "agent.end" else status
                seen.append((seq, kind, at, data.get("delta", "") if kind == "text.delta" else ""))
    return _Seen(run_id=run_id, events=seen, status=status)


def _check(seen: _Seen, deltas: int) -> None:
    assert seen.events, f"{seen.run_id}: no events"
    seqs = [s for s, *_ in seen.events]
    wrong = [(i + 1, s) for i, s in enumerate(seqs) if s != i + 1][:3]
    assert not wrong, f"{seen.run_id}: gap or repeat at (expected, got) {wrong}, {seen.events[-1]}"
    assert seen.events[-1][1] == "agent.end", f"{seen.run_id}: ends {seen.events[-1][1]}"
    assert seen.status == "completed", f"{seen.run_id}: {seen.status}"
    text = "".join(d for *_, d in seen.events)
    assert text == "".join(f"w{i} " for i in range(deltas)), seen.run_id


PEER = "fastapi+pydantic-ai"
"""The backend name that serves the peer (:mod:`benchmarks.server_peer`) instead of Bastion."""


async def _child(backend: str, n: int, deltas: int) -> dict[str, Any]:
    gate = asyncio.Event()
    if backend == PEER:
        stamps = PeerStamps()
        measured = await _drive(peer_app(gate, deltas, stamps), gate, n)
        at = stamps.at
    else:
        hub = _StampedHub()
        async with _backend(backend) as stores:
            app = create_app(_agent(gate, n, deltas), store=stores)
            app.state.bastion.manager.hub = hub
            measured = await _drive(app, gate, n)
        at = hub.at
    seen, start, wall, cpu, base_rss = measured
    for one in seen:
        _check(one, deltas)
    latencies = [
        got - at[one.run_id, seq]
        for one in seen
        for seq, _, got, _ in one.events
        if at.get((one.run_id, seq), 0.0) >= start
    ]
    return {
        "backend": backend,
        "streams": n,
        "events": len(latencies),
        "wall": wall,
        "cpu": cpu,
        "p50": _pct(latencies, 0.5),
        "p99": _pct(latencies, 0.99),
        "base_rss_mb": base_rss / 2**20,
        "peak_rss_mb": _peak_rss() / 2**20,
    }


async def _drive(
    app: ASGIApp, gate: asyncio.Event, n: int
) -> tuple[list[_Seen], float, float, float, int]:
    """Serve ``app``, follow ``n`` runs, open the gate: (streams, start, wall, CPU, RSS)."""
    ready = asyncio.Event()
    sock = socket.create_server(("127.0.0.1", 0), backlog=4096)
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", backlog=4096, timeout_keep_alive=600)
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    tls = ssl.create_default_context()  # unused over http; built once, not once per client
    async with contextlib.AsyncExitStack() as stack:
        # One client (one connection pool) per stream, as separate users have: a shared
        # pool of 1,000 connections scans all of them on every request and close, which
        # cost more CPU than the whole server did.
        https = [
            await stack.enter_async_context(
                httpx.AsyncClient(base_url=url, timeout=300, verify=tls)
            )
            for _ in range(n)
        ]
        connected: list[int] = []
        clients = [asyncio.create_task(_client(h, connected, n, ready)) for h in https]
        await ready.wait()
        gc.collect()
        base_rss = psutil.Process().memory_info().rss
        cpu0, start = time.process_time(), time.perf_counter()
        gate.set()
        seen = await asyncio.gather(*clients)
        wall, cpu = time.perf_counter() - start, time.process_time() - cpu0
    server.should_exit = True
    await serving
    return list(seen), start, wall, cpu, base_rss


@dataclass(frozen=True, kw_only=True, slots=True)
class Figures:
    """One measurement (seconds, MB)."""

    backend: str
    streams: int
    events: int
    wall: float
    cpu: float
    p50: float
    p99: float
    base_rss_mb: float
    peak_rss_mb: float


def measure(backend: str, n: int, deltas: int) -> Figures:
    """Serve ``n`` streams on ``backend`` in a fresh interpreter; return its figures."""
    done = subprocess.run(
        [sys.executable, "-m", "benchmarks.server", "--child", backend, str(n), str(deltas)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        tail = (done.stderr.strip().splitlines() or ["(no output)"])[-1]
        raise RuntimeError(f"S11 {backend} x{n} failed: {tail}")
    return Figures(**json.loads(done.stdout.strip().splitlines()[-1]))


def report(rows: list[Figures]) -> str:
    """The Markdown table of ``rows``."""
    lines = [
        "**S11 server** (one process: uvicorn + the httpx clients; each run a tool call, then "
        "a streamed answer; every run followed over SSE)",
        "",
        "| store | streams | events after the gate | wall s | events/s | latency p50 ms "
        "| latency p99 ms | CPU ms/run | RSS MB connected / peak |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    lines.extend(
        f"| {r.backend} | {r.streams:,} | {r.events:,} | {r.wall:,.2f} | "
        f"{r.events / r.wall:,.0f} | {r.p50 * 1e3:,.1f} | {r.p99 * 1e3:,.1f} | "
        f"{r.cpu / r.streams * 1e3:,.2f} | {r.base_rss_mb:,.0f} / {r.peak_rss_mb:,.0f} |"
        for r in rows
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure each backend at both sizes and print the report."""
    parser = argparse.ArgumentParser(prog="python -m benchmarks.server", description=__doc__)
    parser.add_argument("backends", nargs="*", default=["memory"])
    parser.add_argument("--streams", type=int, default=STREAMS, help="concurrent runs")
    parser.add_argument("--compare", type=int, default=COMPARE, help="the smaller run (0: none)")
    parser.add_argument("--deltas", type=int, default=DELTAS, help="text deltas per answer")
    parser.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    if args.child:
        backend, n, deltas = args.backends
        print(json.dumps(asyncio.run(_child(backend, int(n), int(deltas)))))
        return 0
    rows: list[Figures] = []
    for backend in args.backends:
        for n in [s for s in (args.compare, args.streams) if s > 0]:
            print(f"measuring {backend} with {n:,} streams…", file=sys.stderr)
            rows.append(measure(backend, n, args.deltas))
            print(f"  {json.dumps(asdict(rows[-1]))}", file=sys.stderr)
    print(report(rows))
    return 0


if __name__ == "__main__":
    sys.exit(main())
