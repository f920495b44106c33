"""Where an MCP server is and how to reach it: :class:`Transport` and opening it.

A transport is plain data (a command line, or a URL with headers), so a server's
configuration can be compared, printed and loaded from the ``mcpServers`` JSON. Opening it
enters the SDK's transport context on an exit stack owned by the connection's task
(``_connection.py``), never by the caller's.
"""

from __future__ import annotations

import importlib.util
import json
import os
import sys
from collections.abc import Mapping
from contextlib import AsyncExitStack
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TextIO, TypeAlias, cast

if TYPE_CHECKING:
    import httpx2
    from mcp.client._transport import TransportStreams
    from mcp.server import Server
    from mcp.server.mcpserver import MCPServer as SDKServer

__all__ = ["InProcessServer", "Transport", "TransportKind", "open_transport"]

TransportKind: TypeAlias = Literal["stdio", "http", "sse", "memory"]
InProcessServer: TypeAlias = "Server | SDKServer"
"""A server object of the ``mcp`` SDK, run in this process (a ``memory`` transport)."""


@dataclass(kw_only=True, frozen=True, slots=True)
class Transport:
    """How to reach one MCP server.

    Attributes:
        kind: ``stdio`` (a subprocess), ``http`` (streamable HTTP), ``sse`` (the legacy
            HTTP+SSE transport) or ``memory`` (an SDK server object in this process).
        command: The program of a ``stdio`` server.
        args: Its arguments.
        env: Variables added to the inherited environment of a ``stdio`` server.
        cwd: Its working directory.
        url: The endpoint of an ``http`` or ``sse`` server.
        headers: HTTP headers sent with every request (authorization, ...).
        server: The SDK server object of a ``memory`` transport.
    """

    kind: TransportKind
    command: str = ""
    args: tuple[str, ...] = ()
    env: Mapping[str, str] = field(default_factory=dict[str, str])
    cwd: str | None = None
    url: str = ""
    headers: Mapping[str, str] = field(default_factory=dict[str, str])
    server: InProcessServer | None = None

    def describe(self) -> str:
        """One line for humans: the command line or the URL (header values left out)."""
        if self.kind == "stdio":
            return " ".join([self.command, *self.args])
        if self.kind == "memory":
            return f"in-process {type(self.server).__name__}"
        return self.url


def _errlog(stack: AsyncExitStack) -> TextIO:
    """Where a stdio server's stderr goes: ours, when it is a real file.

    Notebooks and test runners replace ``sys.stderr`` with objects that have no file
    descriptor, which a subprocess cannot write to: the real stderr then, else nowhere.
    """
    for candidate in (sys.stderr, sys.__stderr__):
        try:
            if candidate is not None:
                candidate.fileno()
                return candidate
        except (AttributeError, OSError, ValueError):
            continue
    sink = open(os.devnull, "w", encoding="utf-8")  # noqa: SIM115 - closed by the stack
    stack.callback(sink.close)
    return sink


async def open_transport(
    transport: Transport,
    stack: AsyncExitStack,
    *,
    seconds: float,
) -> TransportStreams:
    """Enter the SDK transport of ``transport`` on ``stack``; returns its two streams.

    Raises:
        ImportError: The ``mcp`` SDK is not installed (names the extra).
        OSError: A ``stdio`` server's command could not be started.
    """
    if importlib.util.find_spec("mcp") is None:  # pragma: no cover - dev installs have it
        raise ImportError("MCP servers need the mcp SDK: pip install 'bastion[mcp]'")
    if transport.kind == "stdio":
        from mcp import StdioServerParameters
        from mcp.client.stdio import stdio_client

        params = StdioServerParameters(
            command=transport.command,
            args=list(transport.args),
            env={**os.environ, **transport.env},
            cwd=transport.cwd,
        )
        return await stack.enter_async_context(stdio_client(params, errlog=_errlog(stack)))
    if transport.kind == "http":
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        client = httpx2.AsyncClient(
            headers=dict(transport.headers),
            timeout=httpx2.Timeout(seconds, read=None),  # calls have their own deadline
            follow_redirects=False,
            event_hooks={"request": [_trace_context_headers]},
        )
        await stack.enter_async_context(client)
        return await stack.enter_async_context(
            streamable_http_client(transport.url, http_client=client)
        )
    if transport.kind == "sse":
        from mcp.client.sse import sse_client

        return await stack.enter_async_context(
            sse_client(transport.url, headers=dict(transport.headers), timeout=seconds)
        )
    from mcp.client._memory import InMemoryTransport

    if transport.server is None:
        raise ValueError("A memory transport needs the SDK server object (Transport.server).")
    return await stack.enter_async_context(InMemoryTransport(transport.server))


_TRACE_KEYS = ("traceparent", "tracestate")


async def _trace_context_headers(request: httpx2.Request) -> None:
    """Send a tool call's W3C trace context (in its ``_meta``) as HTTP headers too.

    The call's message is written by the transport's own task, outside the run's context,
    so the headers are read back from the JSON-RPC message the request carries.
    """
    body: bytes = request.content
    if b'"traceparent"' not in body:
        return
    try:
        message: object = json.loads(body)
    except ValueError:
        return
    meta = _meta_of(message)
    for key in _TRACE_KEYS:
        value = meta.get(key)
        if isinstance(value, str):
            request.headers[key] = value


def _meta_of(message: object) -> dict[str, object]:
    """The ``params._meta`` object of a JSON-RPC message (empty without one)."""
    if not isinstance(message, dict):
        return {}
    params = cast("dict[str, object]", message).get("params")
    if not isinstance(params, dict):
        return {}
    meta = cast("dict[str, object]", params).get("_meta")
    return cast("dict[str, object]", meta) if isinstance(meta, dict) else {}
