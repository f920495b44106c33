"""Sub-agents: what running an agent through ``Agent.as_tool`` costs (issue 5, SPEC S-28).

Run as ``python -m benchmarks.subagent``. The child is the overhead benchmark's S1 agent
(``loop_async``: 3 sequential async tool calls, then the answer; 4 model steps on
``FunctionModel``). Timed, interleaved in 7 rounds, µs per run (median):

* ``child alone``: ``child.run(prompt)``;
* ``parent + plain tool``: a parent whose model calls a hand-written async tool that
  awaits ``child.run(input)`` and returns its output (2 more model steps, 1 tool call);
* ``parent + as_tool``: the same parent calling ``as_tool(child)`` (every child event
  forwarded as ``subagent.event``);
* ``... forward_events="none"``: the same, forwarding nothing;
* ``... governed``: the ``as_tool`` parent with per-minute call limits on ``llm``, ``tool``
  and ``agent`` (every model and tool call of both agents goes through one governor).

Every run is checked: the parent's answer is the child's (``done: 2,3,4``).
"""

from __future__ import annotations

import asyncio
import statistics
import time
from collections.abc import Awaitable, Callable
from typing import Any

from bastion import Agent, GovernanceOptions, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.governance import Limit
from bastion.multi import as_tool
from bastion.testing import Call, FunctionModel, Turn

from ._bastion import _model
from ._script import EXPECTED_OUTPUT, INSTRUCTIONS, PROMPT, SCENARIO, TOOLS

EXPECTED = EXPECTED_OUTPUT["loop_async"]


def _child() -> Agent[Any, str]:
    return Agent(
        "researcher",
        model=_model(SCENARIO["loop_async"]),
        instructions=INSTRUCTIONS,
        tools=[
            tool(s.function, name=s.name, description=s.description, side_effect_class="pure")
            for s in TOOLS["loop_async"]
        ],
    )


def _parent_model() -> FunctionModel:
    async def respond(request: ModelRequest) -> Turn | str:
        await asyncio.sleep(0)
        results = [m.text for m in request.messages if isinstance(m, ToolMessage)]
        if results:
            return results[0]
        return Turn(tool_calls=[Call("researcher", {"input": PROMPT}, id="delegate")])

    return FunctionModel(respond, name="bench-parent", yield_to_loop=False, record_requests=False)


def _parent(tools: list[Any], **config: Any) -> Agent[Any, str]:
    return Agent("boss", model=_parent_model(), tools=tools, **config)


def _plain_tool(child: Agent[Any, str]) -> Any:
    async def researcher(input: str) -> str:
        """Delegate to the researcher."""
        return (await child.run(input)).raise_for_status().output or ""

    return tool(researcher, side_effect_class="read_only")


def agents() -> dict[str, Agent[Any, str]]:
    """The timed agents, by row label."""
    minute = [Limit(type="calls", max=1e12, window="minute")]
    return {
        "child alone": _child(),
        "parent + plain tool": _parent([_plain_tool(_child())]),
        "parent + as_tool": _parent([as_tool(_child())]),
        'parent + as_tool, forward_events="none"': _parent(
            [as_tool(_child(), forward_events="none")]
        ),
        "parent + as_tool, governed": _parent(
            [as_tool(_child())],
            governance=GovernanceOptions(oracles={"llm": minute, "tool": minute, "agent": minute}),
        ),
    }


async def _time(step: Callable[[], Awaitable[Any]], n: int) -> float:
    start = time.perf_counter()
    for _ in range(n):
        await step()
    return (time.perf_counter() - start) / n * 1e6


async def measure(runs: int = 1_400) -> dict[str, float]:
    """Median µs per run of each agent, interleaved over 7 rounds."""

    def runner(agent: Agent[Any, str]) -> Callable[[], Awaitable[None]]:
        async def run() -> None:
            result = await agent.run(PROMPT)
            if result.output != EXPECTED:
                raise AssertionError(f"{agent.name}: {result.output!r} != {EXPECTED!r}")

        return run

    timed = {label: runner(agent) for label, agent in agents().items()}
    for run in timed.values():  # warm up (and check)
        await _time(run, 100)
    times: dict[str, list[float]] = {label: [] for label in timed}
    for _ in range(7):
        for label, run in timed.items():
            times[label].append(await _time(run, runs // 7))
    return {label: statistics.median(t) for label, t in times.items()}


async def main() -> None:
    figures = await measure()
    alone = figures["child alone"]
    plain = figures["parent + plain tool"]
    print("| run | µs/run | vs child alone | vs plain tool |")
    print("|---|---|---|---|")
    for label, value in figures.items():
        print(f"| {label} | {value:.0f} | {value / alone:.2f}x | {value - plain:+.0f} µs |")


if __name__ == "__main__":
    asyncio.run(main())
