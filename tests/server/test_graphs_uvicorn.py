"""Graph executions under a real uvicorn: live signals, a client that leaves and comes back."""

from __future__ import annotations

import asyncio
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
