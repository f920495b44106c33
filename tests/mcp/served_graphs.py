"""Graphs served over MCP by the tests (``bastion mcp serve`` loads them; run as a script it
serves ``outline`` or ``review`` over streamable HTTP on a free port, printed as ``port N``)."""

from __future__ import annotations

import sys
from typing import Any

from pydantic import BaseModel

from bastion.graph import Graph, NodeContext


class Topic(BaseModel):
    subject: str
    points: int


def _outline() -> Graph:
    graph = Graph("outline")

    @graph.node
    def plan(inputs: list[Topic]) -> list[str]:
        topic = inputs[0]
        return [f"{topic.subject} {i + 1}" for i in range(topic.points)]

    @graph.node
    async def write(inputs: list[list[str]]) -> str:
        return "; ".join(inputs[0])

    graph.add_edge("plan", "write")
    return graph


def _review() -> Graph:
    graph = Graph("review")

    @graph.node
    def draft(inputs: list[Any]) -> str:
        return f"A post about {inputs[0]}"

    @graph.node
    async def approve(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.pause({"draft": inputs[0]}, reason="Publish this post?")

    @graph.node
    def publish(inputs: list[Any]) -> str:
        return f"published: {inputs[0]}"

    graph.add_edge("draft", "approve").add_edge("approve", "publish")
    return graph


outline = _outline()
review = _review()


def main() -> None:
    import socket

    import uvicorn

    name, store = sys.argv[1], sys.argv[2]
    graph = {"outline": outline, "review": review}[name]
    app = graph.mcp_server(store=store, source=f"{__file__}:{name}").streamable_http_app()
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(128)
    print(f"port {sock.getsockname()[1]}", flush=True)
    uvicorn.Server(uvicorn.Config(app, log_level="warning")).run(sockets=[sock])


if __name__ == "__main__":
    main()
