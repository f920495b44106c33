"""Code mode vs direct tool calls on a result-heavy task (issue 4, SPEC G-46..G-49).

``python -m benchmarks.code_mode`` runs one task two ways through a real ``Agent`` on a
scripted model: a listing tool that returns about 2 KB of JSON is called for 10 pages and
the answer needs only the item count and total price.

* **direct**: the model calls ``list_items`` 10 times; every result enters the context.
* **code mode**: the model sends one ``code_execute`` script that calls the tool 10 times
  in the pydantic-monty sandbox and returns the aggregate; only that enters the context.

Tokens entering the context are the characters of the tool messages the model reads,
divided by 4. Both runs are checked: the tool ran 10 times and the aggregate is right.

Then, on a warm sandbox (pool started, one script already run), the wall time of
``code_execute`` is measured directly (``CodeMode.execute``): a trivial script (the
sandbox's own overhead per execution), and the 10-call script against 10 direct
``ToolExecutor.run_one`` calls of the same tool (the difference is the sandbox's cost of
bridging the calls). Target: ≤ 5 ms of sandbox overhead per execution once warm.
"""

from __future__ import annotations

import asyncio
import json
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bastion import Agent, ToolOptions, tool
from bastion.core import RunContext, ToolCall, ToolMessage
from bastion.testing import Call, ScriptedModel, Turn

PAGES = 10
REPEATS = 200
TARGET_MS = 5.0
_ITEMS: list[dict[str, Any]] = [
    {"id": i, "name": f"item-{i}", "price": i * 10, "description": "d" * 120} for i in range(12)
]
_runs: list[int] = []

SCRIPT = f"""\
count = 0
total = 0
for page in range({PAGES}):
    items = await tools.list_items(page=page)
    count += len(items)
    total += sum(item["price"] for item in items)
{{"count": count, "total": total}}
"""
EXPECTED = {"count": PAGES * len(_ITEMS), "total": PAGES * sum(i["price"] for i in _ITEMS)}


@tool(side_effect_class="read_only")
def list_items(page: int) -> list[dict[str, Any]]:
    """List one page of the catalogue."""
    _runs.append(page)
    return _ITEMS


def _tool_chars(model: ScriptedModel) -> tuple[int, list[str]]:
    final = model.requests[-1].messages
    texts = [m.content for m in final if isinstance(m, ToolMessage)]
    strings = [t for t in texts if isinstance(t, str)]
    return sum(len(t) for t in strings), strings


async def _direct() -> int:
    _runs.clear()
    turns: list[Turn | str] = [
        Turn(tool_calls=[Call("list_items", {"page": p})]) for p in range(PAGES)
    ]
    model = ScriptedModel([*turns, "done"])
    agent = Agent("direct", model=model, tools=[list_items])
    (await agent.run("Count the items and their total price.")).raise_for_status()
    chars, texts = _tool_chars(model)
    if _runs != list(range(PAGES)) or len(texts) != PAGES:
        raise RuntimeError("direct mode: the tool did not run 10 times")
    return chars


async def _code() -> int:
    _runs.clear()
    model = ScriptedModel([Turn(tool_calls=[Call("code_execute", {"source": SCRIPT})]), "done"])
    agent = Agent(
        "code", model=model, tools=[list_items], tool_options=ToolOptions(invocation="code-mode")
    )
    try:
        (await agent.run("Count the items and their total price.")).raise_for_status()
    finally:
        await agent.aclose()
    chars, texts = _tool_chars(model)
    if _runs != list(range(PAGES)):
        raise RuntimeError("code mode: the tool did not run 10 times")
    if [json.loads(t) for t in texts] != [EXPECTED]:
        raise RuntimeError(f"code mode returned {texts!r}")
    return chars


async def _timed(fn: Callable[[], Awaitable[object]]) -> float:
    samples: list[float] = []
    for _ in range(REPEATS):
        start = time.perf_counter()
        await fn()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples) * 1000


async def _warm_timings() -> dict[str, float]:
    agent = Agent(
        "code",
        model=ScriptedModel(["-"]),
        tools=[list_items],
        tool_options=ToolOptions(invocation="code-mode"),
    )
    mode = agent.config.code_mode
    if mode is None:
        raise RuntimeError("the agent is not in code mode")
    ctx: RunContext[Any] = RunContext(run_id="bench", agent_name="code", tool_call_id="c1")
    try:
        await mode.execute("1 + 1", ctx)  # start the pool
        await mode.execute(SCRIPT, ctx)
        trivial = await _timed(lambda: mode.execute("1 + 1", ctx))
        script = await _timed(lambda: mode.execute(SCRIPT, ctx))

        async def direct_calls() -> None:
            for page in range(PAGES):
                call = ToolCall(id=f"d{page}", name="list_items", arguments=f'{{"page":{page}}}')
                await agent.config.executor.run_one(call, ctx)

        direct = await _timed(direct_calls)
    finally:
        await agent.aclose()
    return {"trivial": trivial, "script": script, "direct_calls": direct}


async def main() -> None:
    """Run both modes, then the warm timings, and print a Markdown report."""
    direct_chars = await _direct()
    code_chars = await _code()
    timings = await _warm_timings()
    direct_tokens, code_tokens = direct_chars / 4, code_chars / 4
    bridge = timings["script"] - timings["direct_calls"]
    print(f"### Code mode vs direct ({PAGES} calls of a ~2 KB listing tool)\n")
    print("| mode | tool-message chars | tokens entering the context |")
    print("|---|---:|---:|")
    print(f"| direct | {direct_chars:,} | {direct_tokens:,.0f} |")
    print(f"| code mode | {code_chars:,} | {code_tokens:,.0f} |")
    print(f"\nReduction: {direct_tokens / code_tokens:,.0f}x fewer tokens.\n")
    print(f"Warm `code_execute` wall time (median of {REPEATS}):\n")
    print(f"* trivial script (`1 + 1`): {timings['trivial']:.2f} ms (target <= {TARGET_MS} ms)")
    print(f"* 10-call script: {timings['script']:.2f} ms")
    print(f"* the same 10 calls through `ToolExecutor.run_one`: {timings['direct_calls']:.2f} ms")
    print(f"* sandbox cost of bridging 10 calls: {bridge:.2f} ms")
    if timings["trivial"] > TARGET_MS:
        print(f"\nover target: {timings['trivial']:.2f} ms > {TARGET_MS} ms", file=sys.stderr)


if __name__ == "__main__":
    asyncio.run(main())
