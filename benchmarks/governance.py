"""Governance: policy resolution cost per action (issue 5).

Run as ``python -m benchmarks.governance``. Times ``Governor.check`` (capture + bubble over
every level, then the limit checks) and a full ``Governor.exec`` around a no-op async
function, for 0, 5 and 50 custom policies spread over 4 key levels
(global, ``llm``, ``llm:anthropic``, ``llm:anthropic:claude``), with no limits, and once
with a realistic set (5 policies + a daily cost limit + a per-minute call limit). Every
policy allows, so each action walks the whole chain. Prints a Markdown table (µs/action,
median and minimum of 7 repetitions).

Then S1 through the agent (3 tool calls + answer on ``FunctionModel``, the overhead
benchmark's ``loop_sync`` workload): without governance, and with a realistic policy set
(a daily cost budget, a per-minute call limit on model calls and on tools, and a rounds
limit). Target: ≤ 1.2 times the run without policies.
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bastion.core import Usage
from bastion.governance import Governor, Limit, PolicyAction, PolicyResult, allow

KEY = "llm:anthropic:claude"
LEVELS = ("llm", "llm:anthropic", KEY)
USAGE = Usage(prompt_tokens=100, completion_tokens=20, cost_usd=0.0)


def _policy(action: PolicyAction) -> PolicyResult:
    return allow()


def build(n_policies: int, *, limits: bool = False) -> Governor:
    """A governor with ``n_policies`` spread round-robin over the 4 levels."""
    global_policies: list[Any] = []
    oracles: dict[str, list[Any]] = {level: [] for level in LEVELS}
    for i in range(n_policies):
        if i % 4 == 0:
            global_policies.append(_policy)
        else:
            oracles[LEVELS[i % 4 - 1]].append(_policy)
    if limits:
        oracles["llm"].append(Limit(type="cost", max=1e9, window="day"))
        oracles["llm"].append(Limit(type="calls", max=1e12, window="minute"))
    return Governor(policies=global_policies, oracles=oracles)


async def _noop() -> Usage:
    return USAGE


async def _time(step: Callable[[], Awaitable[Any]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await step()
    return (time.perf_counter() - start) / n * 1e6


async def measure(n_policies: int, *, limits: bool = False, n: int = 20_000) -> dict[str, float]:
    """Return median µs per ``check`` and per ``exec``."""
    gov = build(n_policies, limits=limits)

    async def check() -> None:
        await gov.check(KEY, node="agent")

    async def exec_() -> None:
        await gov.exec(KEY, _noop, node="agent")

    await _time(check, 1_000)
    await _time(exec_, 1_000)
    checks = [await _time(check, n) for _ in range(7)]
    execs = [await _time(exec_, n // 4) for _ in range(7)]
    return {
        "check": statistics.median(checks),
        "check_min": min(checks),
        "exec": statistics.median(execs),
        "exec_min": min(execs),
    }


async def _noop_floor(n: int) -> float:
    return await _time(_noop, n)


def _s1_agent(governed: bool) -> Any:
    from bastion import Agent, tool
    from bastion.governance import Budget

    from ._bastion import _model
    from ._script import INSTRUCTIONS, SCENARIO, TOOLS

    config: dict[str, Any] = {}
    if governed:
        config = {
            "budget": Budget(cost_usd=10_000, window="day", unpriced="allow"),
            "oracles": {
                "llm": [
                    Limit(type="calls", max=1_000_000, window="minute"),
                    Limit(type="rounds", max=10, window="invocation"),
                ],
                "tool": [Limit(type="calls", max=1_000_000, window="minute")],
            },
        }
    return Agent(
        "bench",
        model=_model(SCENARIO["loop_sync"]),
        instructions=INSTRUCTIONS,
        tools=[
            tool(s.function, name=s.name, description=s.description, side_effect_class="pure")
            for s in TOOLS["loop_sync"]
        ],
        **config,
    )


async def measure_s1(runs: int = 2_000) -> dict[str, float]:
    """Median µs per S1 run, without and with the realistic policy set (interleaved)."""
    from ._script import PROMPT

    agents = {"plain": _s1_agent(False), "governed": _s1_agent(True)}

    async def run(agent: Any) -> None:
        (await agent.run(PROMPT)).raise_for_status()

    times: dict[str, list[float]] = {"plain": [], "governed": []}
    for agent in agents.values():  # warm up
        await _time(lambda a=agent: run(a), 200)
    for _ in range(7):
        for name, agent in agents.items():
            times[name].append(await _time(lambda a=agent: run(a), runs // 7))
    return {name: statistics.median(t) for name, t in times.items()}


async def main() -> None:
    floor = statistics.median([await _noop_floor(20_000) for _ in range(7)])
    rows = [
        ("0 policies", await measure(0)),
        ("5 policies", await measure(5)),
        ("50 policies", await measure(50)),
        ("5 policies + cost/day + calls/minute limits", await measure(5, limits=True)),
    ]
    print("| policy set (4 key levels) | check µs/action (min) | exec µs/action (min) |")
    print("|---|---|---|")
    for label, f in rows:
        print(
            f"| {label} | {f['check']:.2f} ({f['check_min']:.2f}) "
            f"| {f['exec']:.2f} ({f['exec_min']:.2f}) |"
        )
    print(f"\nawaiting the no-op action itself: {floor:.2f} µs")
    five = rows[1][1]["check"]
    print(f"target ≤ 5 µs per action with 5 policies: {'met' if five <= 5 else 'missed'}")
    s1 = await measure_s1()
    ratio = s1["governed"] / s1["plain"]
    print("\n| S1 through the agent (loop_sync) | µs/run |")
    print("|---|---|")
    print(f"| no governance | {s1['plain']:.1f} |")
    print(f"| cost/day + calls/minute (llm, tool) + rounds | {s1['governed']:.1f} |")
    print(f"\nratio {ratio:.2f}x, target ≤ 1.2x: {'met' if ratio <= 1.2 else 'missed'}")


if __name__ == "__main__":
    asyncio.run(main())
