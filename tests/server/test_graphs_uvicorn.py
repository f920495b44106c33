"""Graph executions under a real uvicorn: live signals, a client that leaves and comes back."""

from __future__ import annotations

import asyncio
import re
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx

from bastion.graph import Graph
from bastion.server import create_app

from ._agents import Sse, parse_sse
from .test_uvicorn import TOKENS, serving


def gated(gate: asyncio.Event) -> Graph:
    graph = Graph("gated")

    async def hold(inputs: list[Any]) -> str:
        await gate.wait()
        return f"held {inputs[0]}"

    graph.add_node("hold", hold).add_node("done", lambda inputs: inputs[0] + ", done")
    graph.add_edge("hold", "done")
    return graph


async def _follow(http: httpx.AsyncClient, execution: str, **options: Any) -> list[Sse]:
    after, stop = options.get("after"), options.get("stop_after")
    headers = {} if after is None else {"Last-Event-ID": str(after)}
    found: list[Sse] = []
    async with http.stream("GET", f"/executions/{execution}/events", headers=headers) as body:
        assert body.status_code == 200
        async for sse in parse_sse(body.aiter_lines()):
            found.append(sse)
            if sse.event == stop:
                break  # the client goes away while the execution runs
    return found


async def test_signals_are_live_and_a_reconnect_gets_the_rest(sqlite_url: str) -> None:
    gate = asyncio.Event()
    app = create_app({}, graphs={"gated": gated(gate)}, store=sqlite_url, auth=TOKENS)
    async with serving(app) as http:
        started = await http.post("/graphs/gated/executions", json={"input": "x"})
        execution = started.json()["execution_id"]
        first = await _follow(http, execution, stop_after="node.before")
        assert [(e.id, e.event) for e in first] == [(1, "graph.before"), (2, "node.before")]
        running = (await http.get(f"/executions/{execution}")).json()
        assert running["status"] == "running"
        assert running["finished"] == {}
        gate.set()  # the node was waiting while nobody watched
        rest = await _follow(http, execution, after=first[-1].id)
        assert [(e.id, e.event) for e in rest] == [
            (3, "node.after"), (4, "node.before"), (5, "node.after"), (6, "graph.after"),
        ]  # fmt: skip
        assert rest[-1].data["output"] == "held x, done"
        assert rest[0].data["node_key"] == "hold"


async def test_bastion_serve_serves_a_graph_given_with_graph(sqlite_url: str) -> None:
    root = Path(__file__).parents[2]
    process = await asyncio.create_subprocess_exec(
        sys.executable, "-m", "bastion.cli", "serve", "--graph",
        "tests/mcp/served_graphs.py:outline", "--store", sqlite_url, "--port", "0",
        "--takeover-interval", "0", cwd=root, stderr=asyncio.subprocess.PIPE,
    )  # fmt: skip
    try:
        assert process.stderr is not None
        port = 0
        while line := (await asyncio.wait_for(process.stderr.readline(), 30)).decode():
            if found := re.search(r"Uvicorn running on http://127\.0\.0\.1:(\d+)", line):
                port = int(found.group(1))
                break
        assert port, "the server exited before it listened"
        async with httpx.AsyncClient(base_url=f"http://127.0.0.1:{port}", timeout=20) as http:
            bad = await http.post("/graphs/outline/executions", json={"input": {"points": 2}})
            assert bad.status_code == 400
            assert "The input of graph 'outline' does not fit its entry" in bad.text
            assert "subject" in bad.json()["error"]["message"]
            assert (await http.get("/graphs/outline/executions")).json() == []  # nothing ran
            body = {"input": {"subject": "graphs", "points": 2}}
            started = await http.post("/graphs/outline/executions", json=body)
            events = await _follow(http, started.json()["execution_id"])
        assert events[-1].data["output"] == "graphs 1; graphs 2"
    finally:
        if process.returncode is None:
            process.send_signal(signal.SIGTERM)
        await process.wait()


def test_bastion_serve_without_agents_or_graphs_is_a_usage_error() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "bastion.cli", "serve"],
        capture_output=True, text=True, timeout=60, check=False,
    )  # fmt: skip
    assert done.returncode == 2
    assert done.stderr.strip().endswith(
        "Name the agents to serve (MODULE:ATTR), or a graph with --graph."
    )
    assert "Traceback" not in done.stderr
