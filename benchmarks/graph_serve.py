"""What serving a graph costs: an MCP tool call (in process) and an HTTP execution.

``python -m benchmarks.graph_serve``: a two-node graph served by ``graph.mcp_server()``
called through Bastion's MCP client in process (no transport), and started over HTTP
(``create_app(graphs=...)``, in-process ASGI, SQLite store) and followed to its end on the
SSE. Prints the median and p90 of each, in milliseconds.
"""

from __future__ import annotations

import asyncio
import statistics
import tempfile
import time
from typing import Any

import httpx

from bastion.graph import Graph
from bastion.mcp import MCPServer
from bastion.server import create_app

CALLS = 200


def _graph() -> Graph:
    graph = Graph("pair")
    graph.add_node("first", lambda inputs: [inputs[0]])
    graph.add_node("second", lambda inputs: len(inputs[0]))
    graph.add_edge("first", "second")
    return graph


def _report(name: str, times: list[float]) -> None:
    times.sort()
    median = statistics.median(times) * 1000
    p90 = times[int(len(times) * 0.9)] * 1000
    print(f"{name}: median {median:.2f} ms, p90 {p90:.2f} ms ({len(times)} calls)")


async def _mcp() -> list[float]:
    times: list[float] = []
    async with MCPServer.in_process(_graph().mcp_server()) as client:
        for i in range(CALLS):
            start = time.perf_counter()
            await client.call_tool("pair", {"input": i})
            times.append(time.perf_counter() - start)
    return times


async def _http(store: str) -> list[float]:
    app = create_app({}, graphs={"pair": _graph()}, store=store, takeover_interval=None)
    times: list[float] = []
    transport = httpx.ASGITransport(app=app)
    async with (
        app.router.lifespan_context(app),
        httpx.AsyncClient(transport=transport, base_url="http://bastion") as http,
    ):
        for i in range(CALLS):
            start = time.perf_counter()
            started: Any = (await http.post("/graphs/pair/executions", json={"input": i})).json()
            async with http.stream("GET", started["events"]) as events:
                async for _ in events.aiter_lines():
                    pass
            times.append(time.perf_counter() - start)
    return times


def main() -> None:
    _report("MCP tool call, in process", asyncio.run(_mcp()))
    with tempfile.TemporaryDirectory() as tmp:
        _report("HTTP start + SSE to the end, SQLite", asyncio.run(_http(f"sqlite:///{tmp}/b.db")))


if __name__ == "__main__":
    main()
