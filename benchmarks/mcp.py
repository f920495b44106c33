"""MCP cost: per-call overhead over the raw SDK, and registering a 10,000-tool server.

``python -m benchmarks.mcp`` starts the test suite's demo server (``tests/mcp``) over
streamable HTTP and times, on that one server process, one call of each variant in turn
(so machine load hits every variant alike):

* **raw SDK**: ``ClientSession.call_tool("add")``, the floor;
* **MCPServer.call_tool**: Bastion's connection (owning task, deadline, loss handling);
* **agent tool path**: the MCP tool through the agent's executor (argument validation,
  the governance-free gate, inbound sanitisation, the result limiter), i.e. everything a
  model's call of the tool costs in a run;
* **openai-agents** ``MCPServerStreamableHttp.call_tool`` and **pydantic-ai**
  ``MCPToolset.direct_call_tool`` (its FastMCP client) on the same server.

Then it lists the low-level catalogue server's 10,000 tools once, and times turning the
listing into an agent's tools: building the tools, registering them (collision
resolution) and rebuilding what the model is shown (the deferred catalogue's
``tool_search`` index). Figures: medians, µs per call; seconds for the catalogue.
"""

from __future__ import annotations

import asyncio
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from bastion import Agent
from bastion.core import RunContext, SystemClock, ToolCall
from bastion.mcp import MCPServer
from bastion.testing import ScriptedModel, Turn
from bastion.tools import InboundSanitizer, ResultLimiter, ToolExecutor

ROOT = Path(__file__).resolve().parent.parent
DEMO = str(ROOT / "tests" / "mcp" / "demo_server.py")
CATALOGUE = str(ROOT / "tests" / "mcp" / "catalogue_server.py")
CALLS = 500  # per variant


async def per_call() -> dict[str, float]:
    """Median µs per ``add`` call, per variant, all on one HTTP server process."""
    import httpx2
    from mcp import ClientSession
    from mcp.client.streamable_http import streamable_http_client

    process = await asyncio.create_subprocess_exec(
        sys.executable, DEMO, "http", "0", stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    url = f"http://127.0.0.1:{int((await process.stdout.readline()).split()[1])}/mcp"
    server = MCPServer.http(url, name="demo")
    tools = {t.name: t for t in await server.list_tools()}
    executor = ToolExecutor(
        tools,
        max_parallel=1,
        clock=SystemClock(),
        processors=(InboundSanitizer(), ResultLimiter(tools.values())),
    )
    ctx: RunContext[None] = RunContext(run_id="r", agent_name="bench")
    call = ToolCall(id="c1", name="add", arguments='{"a": 1, "b": 2}')
    arguments = {"a": 1, "b": 2}
    peer = await _openai_agents(url)
    pydantic_peer = await _pydantic_ai(url)
    samples: dict[str, list[float]] = {}
    try:
        async with (
            httpx2.AsyncClient() as client,
            streamable_http_client(url, http_client=client) as (read, write),
            ClientSession(read, write) as session,
        ):
            await session.initialize()
            variants: dict[str, Callable[[], Awaitable[Any]]] = {
                "raw SDK ClientSession.call_tool": lambda: session.call_tool("add", arguments),
                "MCPServer.call_tool": lambda: server.call_tool("add", arguments),
                "agent tool path (executor)": lambda: executor.run_one(call, ctx),
            }
            if peer is not None:
                variants["openai-agents MCPServerStreamableHttp"] = lambda: peer.call_tool(
                    "add", arguments
                )
            if pydantic_peer is not None:
                variants["pydantic-ai MCPToolset"] = lambda: pydantic_peer.direct_call_tool(
                    "add", arguments
                )
            for i in range(CALLS + 20):  # one call of each variant in turn: load hits all alike
                for name, run in variants.items():
                    start = time.perf_counter()
                    await run()
                    if i >= 20:  # the first rounds warm up
                        samples.setdefault(name, []).append(time.perf_counter() - start)
    finally:
        await server.aclose()
        if peer is not None:
            await peer.cleanup()
        if pydantic_peer is not None:
            await pydantic_peer.__aexit__(None, None, None)
        process.kill()
        await process.wait()
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


async def _openai_agents(url: str) -> Any:
    try:
        from agents.mcp import MCPServerStreamableHttp
    except ImportError:
        return None
    peer = MCPServerStreamableHttp(params={"url": url})
    try:
        await peer.connect()
    except Exception as exc:  # a peer that does not run on this SDK is reported, not fatal
        print(f"openai-agents MCP: not runnable here ({type(exc).__name__}: {exc})")
        return None
    return peer


async def _pydantic_ai(url: str) -> Any:
    try:
        from pydantic_ai.mcp import MCPToolset
    except ImportError:
        return None
    peer = MCPToolset(url)
    try:
        await peer.__aenter__()
    except Exception as exc:  # a peer that does not run on this SDK is reported, not fatal
        print(f"pydantic-ai MCP: not runnable here ({type(exc).__name__}: {exc})")
        return None
    return peer


async def catalogue(count: int = 10_000) -> dict[str, float]:
    """Seconds to list ``count`` tools over stdio, and to register them in an agent."""
    server = MCPServer.stdio(sys.executable, [CATALOGUE, str(count)], name="catalogue")
    start = time.perf_counter()
    await server.describe_tools()
    listed = time.perf_counter() - start
    wire = await server.describe_tools()
    figures: list[tuple[float, float]] = []
    for _ in range(5):
        agent = Agent("big", model=ScriptedModel([Turn(text="x")]), tools=[])
        start = time.perf_counter()
        built = server._build_tools(wire)
        agent.registry.set_source("source:catalogue", built)
        registered = time.perf_counter() - start
        _ = agent.config.tools  # the new tool set: what the model is shown, and runs
        figures.append((registered, time.perf_counter() - start))
    await server.aclose()
    return {
        "list over stdio (s)": listed,
        "build + register (s)": statistics.median(f[0] for f in figures),
        "build + register + advertise (s)": statistics.median(f[1] for f in figures),
    }


async def main() -> None:
    calls = await per_call()
    floor = calls["raw SDK ClientSession.call_tool"]
    print(f"MCP per-call cost, one demo server over streamable HTTP, median of {CALLS} calls")
    for name, value in calls.items():
        extra = (value - floor) / floor * 100
        print(f"  {name:42s} {value:8.0f} µs  {extra:+6.1f}% vs raw SDK")
    print("10,000-tool catalogue")
    for name, value in (await catalogue()).items():
        print(f"  {name:42s} {value:8.3f}")


if __name__ == "__main__":
    asyncio.run(main())
