"""MCP cost: per-call overhead over the raw SDK, and registering a 10,000-tool server.

``python -m benchmarks.mcp`` starts the test suite's demo server (``tests/mcp``) over
stdio and times, on that one server process, in interleaved rounds (so machine load hits
every variant alike):

* **raw SDK**: ``ClientSession.call_tool("add")``, the floor;
* **MCPServer.call_tool**: Bastion's connection (owning task, deadline, loss handling);
* **agent tool path**: the MCP tool through the agent's executor (argument validation,
  the governance-free gate, inbound sanitisation, the result limiter), i.e. everything a
  model's call of the tool costs in a run;
* **openai-agents** ``MCPServerStdio.call_tool`` on its own connection to the same kind
  of server (pydantic-ai's MCP client needs ``fastmcp``, not in the lock file: reported).

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
ROUNDS = 10
CALLS = 60  # per variant and round


async def _timed(call: Callable[[], Awaitable[Any]]) -> list[float]:
    samples: list[float] = []
    for _ in range(CALLS):
        start = time.perf_counter()
        await call()
        samples.append(time.perf_counter() - start)
    return samples


async def per_call() -> dict[str, float]:
    """Median µs per ``add`` call, per variant."""
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    params = StdioServerParameters(command=sys.executable, args=[DEMO, "stdio"])
    server = MCPServer.stdio(sys.executable, [DEMO, "stdio"], name="demo")
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
    variants: dict[str, Callable[[], Awaitable[Any]]] = {}
    peers = await _openai_agents()
    samples: dict[str, list[float]] = {}
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        await session.initialize()
        variants["raw SDK ClientSession.call_tool"] = lambda: session.call_tool("add", arguments)
        variants["MCPServer.call_tool"] = lambda: server.call_tool("add", arguments)
        variants["agent tool path (executor)"] = lambda: executor.run_one(call, ctx)
        if peers is not None:
            variants["openai-agents MCPServerStdio.call_tool"] = lambda: peers.call_tool(
                "add", arguments
            )
        for name, run in variants.items():  # warm-up
            await _timed(run)
        for _ in range(ROUNDS):
            for name, run in variants.items():
                samples.setdefault(name, []).extend(await _timed(run))
    await server.aclose()
    if peers is not None:
        await peers.cleanup()
    return {name: statistics.median(values) * 1e6 for name, values in samples.items()}


async def _openai_agents() -> Any:
    try:
        from agents.mcp import MCPServerStdio
    except ImportError:
        return None
    peer = MCPServerStdio(params={"command": sys.executable, "args": [DEMO, "stdio"]})
    try:
        await peer.connect()
    except Exception as exc:  # a peer that does not run on this SDK is reported, not fatal
        print(f"openai-agents MCP: not runnable here ({type(exc).__name__}: {exc})")
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
        built = server._build_tools(wire)  # pyright: ignore[reportPrivateUsage]
        agent.registry.set_source("source:catalogue", built)
        registered = time.perf_counter() - start
        agent.sync_tool_views()
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
    print(f"MCP per-call cost, demo server over stdio, median of {ROUNDS * CALLS} calls")
    for name, value in calls.items():
        extra = (value - floor) / floor * 100
        print(f"  {name:42s} {value:8.0f} µs  {extra:+6.1f}% vs raw SDK")
    print("pydantic-ai MCP: not run (its MCP client needs fastmcp, not in the lock file)")
    print("10,000-tool catalogue")
    for name, value in (await catalogue()).items():
        print(f"  {name:42s} {value:8.3f}")


if __name__ == "__main__":
    asyncio.run(main())
