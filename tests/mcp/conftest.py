"""Real MCP servers for the tests: the demo server over stdio and streamable HTTP."""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest

from bastion.mcp import MCPServer

DEMO = str(Path(__file__).with_name("demo_server.py"))


class HttpDemo:
    """A demo server process serving streamable HTTP; :meth:`restart` keeps the port."""

    def __init__(self, transport: str = "http") -> None:
        self.transport = transport
        self.process: asyncio.subprocess.Process | None = None
        self.port = 0

    @property
    def url(self) -> str:
        path = "sse" if self.transport == "sse" else "mcp"
        return f"http://127.0.0.1:{self.port}/{path}"

    async def start(self, *extra: str) -> None:
        self.process = await asyncio.create_subprocess_exec(
            sys.executable,
            DEMO,
            self.transport,
            str(self.port),
            *extra,
            stdout=asyncio.subprocess.PIPE,
        )
        assert self.process.stdout is not None
        line = await asyncio.wait_for(self.process.stdout.readline(), 30)
        assert line.startswith(b"port "), line
        self.port = int(line.split()[1])

    async def kill(self) -> None:
        process = self.process
        if process is not None and process.returncode is None:
            process.kill()
            await process.wait()

    async def restart(self) -> None:
        await self.kill()
        await self.start()


@pytest.fixture
async def http_demo() -> AsyncIterator[HttpDemo]:
    demo = HttpDemo()
    await demo.start()
    try:
        yield demo
    finally:
        await demo.kill()


@pytest.fixture
async def stdio_demo() -> AsyncIterator[Callable[..., MCPServer]]:
    """Make demo servers over stdio; every one made is closed after the test."""
    made: list[MCPServer] = []

    def make(*extra: str, **options: Any) -> MCPServer:
        options.setdefault("name", "demo")
        server = MCPServer.stdio(sys.executable, [DEMO, "stdio", *extra], **options)
        made.append(server)
        return server

    yield make
    for server in made:
        with contextlib.suppress(Exception):
            await server.aclose()
