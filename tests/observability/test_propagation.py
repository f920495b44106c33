"""Trace context leaving a run: MCP calls over HTTP (headers and ``_meta``), web_fetch."""

from __future__ import annotations

import asyncio
import json
import socket
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any, ClassVar

import pytest
import uvicorn

from bastion import Agent
from bastion.core import UserError
from bastion.mcp import MCPServer
from bastion.observability import uninstrument
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools.builtins import web_fetch_tool
from tests.mcp import demo_server as demo

from .test_tracing import Traced


@pytest.fixture
def traced() -> Iterator[Traced]:
    yield Traced()
    uninstrument()


def _ids(traced: Traced, name: str) -> list[str]:
    span = traced.named(name)
    assert span.context is not None
    return [format(span.context.trace_id, "032x"), format(span.context.span_id, "016x")]


async def test_http_mcp_calls_carry_the_trace_context_in_headers_and_meta(
    traced: Traced,
) -> None:
    # covers C21
    # The demo server's streamable HTTP app, served in this process on a socket that
    # listens before the client connects (the client's requests wait in its backlog).
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen(16)
    app = demo.server.streamable_http_app()
    serving = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    task = asyncio.create_task(serving.serve(sockets=[sock]))
    try:
        url = f"http://127.0.0.1:{sock.getsockname()[1]}/mcp"
        server = MCPServer.http(url, name="demo")
        script: list[Turn | str] = [Turn(tool_calls=[Call("trace_context", {}, id="h1")]), "ok"]
        async with Agent("a", model=ScriptedModel(script), tools=[server]) as agent:
            events = [e async for e in agent.stream("go")]
    finally:
        serving.should_exit = True
        await task
        sock.close()

    (end,) = [e for e in events if e.type == "tool.execute.end"]
    wrapped = end.result.splitlines()  # the untrusted-data wrapping around the result
    assert wrapped[0] == "[bastion:untrusted-data begin]"
    seen = json.loads(json.loads(wrapped[1])["result"])
    ids = _ids(traced, "execute_tool trace_context")
    assert seen["header"].split("-")[1:3] == ids  # the HTTP request's traceparent header
    assert seen["meta"] == seen["header"]  # and the same in the call's _meta


class Page(BaseHTTPRequestHandler):
    """Serves a page, keeping the traceparent header of each request."""

    seen: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        Page.seen.append(self.headers.get("traceparent", ""))
        body = b"hello"
        self.send_response(200)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_web_fetch_sends_the_trace_context_only_when_asked(traced: Traced) -> None:
    server = HTTPServer(("127.0.0.1", 0), Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    Page.seen.clear()
    url = f"http://127.0.0.1:{server.server_port}/page"
    script: list[Turn | str] = [Turn(tool_calls=[Call("web_fetch", {"url": url}, id="w1")]), "ok"]
    try:
        for trace_context in (False, True):
            traced.exporter.clear()
            fetch = web_fetch_tool(allow=["127.0.0.1"], trace_context=trace_context)
            result = await Agent("a", model=ScriptedModel(script), tools=[fetch]).run("go")
            assert result.output == "ok"
    finally:
        server.shutdown()
        server.server_close()
    untraced, header = Page.seen
    assert untraced == ""  # the default: sites fetched get no trace id
    assert header.split("-")[1:3] == _ids(traced, "execute_tool web_fetch")


def test_web_fetch_trace_context_must_be_a_bool() -> None:
    with pytest.raises(UserError, match="trace_context must be a bool"):
        web_fetch_tool(trace_context="yes")  # type: ignore[arg-type]
