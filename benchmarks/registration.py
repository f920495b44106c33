"""Registering 10,000 plain tools in an ``Agent``: what a large in-process catalogue costs.

``python -m benchmarks.registration`` times, each as the median of 3 rounds:

* **tool(fn)**: ``tool(fn, name=...)`` for 10,000 names over one annotated function, so
  every tool derives its argument schema from the signature (the ``@tool`` path);
* **tool(parameters=...)**: 10,000 tools with a hand-written JSON Schema each (the path
  MCP-like catalogues take; the schema is checked against the JSON Schema meta-schema);
* **Agent(tools=...)**: building an agent with the 10,000 ``tool(fn)`` tools (name
  checks, collision resolution, what the model is shown).

Target (issue 14): 10,000 tools register in ≤ 1 s (the last row; building the tools is
reported beside it).
"""

from __future__ import annotations

import statistics
import sys
import time
from collections.abc import Callable

from bastion import Agent, tool
from bastion.testing import ScriptedModel
from bastion.tools import Tool

__all__ = ["COUNT", "TARGET_SECONDS", "agent_with", "main", "schema_tools", "signature_tools"]

COUNT = 10_000
TARGET_SECONDS = 1.0
_SCHEMA = {
    "type": "object",
    "properties": {"city": {"type": "string", "description": "City name."}},
    "required": ["city"],
}


def _lookup(city: str, days: int = 1) -> str:
    """Look up the weather of a city."""
    return f"{city}: sunny for {days} day(s)"


def signature_tools(count: int = COUNT) -> list[Tool]:
    """``count`` tools whose schemas come from ``_lookup``'s signature."""
    return [tool(_lookup, name=f"lookup_{i}", side_effect_class="read_only") for i in range(count)]


def schema_tools(count: int = COUNT) -> list[Tool]:
    """``count`` tools, each with its own JSON Schema."""
    return [
        tool(_lookup, name=f"lookup_{i}", parameters=_SCHEMA, side_effect_class="read_only")
        for i in range(count)
    ]


def agent_with(tools: list[Tool]) -> Agent[None, str]:
    """An agent holding ``tools`` (its model is never called)."""
    return Agent("big", model=ScriptedModel([]), tools=tools)


def _median_seconds(work: Callable[[], object], rounds: int = 3) -> float:
    taken: list[float] = []
    for _ in range(rounds):
        start = time.perf_counter()
        work()
        taken.append(time.perf_counter() - start)
    return statistics.median(taken)


def main() -> int:
    """Print the table (Markdown); exit status 1 if registering misses the target."""
    tools = signature_tools()
    rows = {
        f"{COUNT:,} x tool(fn)": _median_seconds(signature_tools),
        f"{COUNT:,} x tool(parameters=...)": _median_seconds(schema_tools),
        f"Agent(tools=[{COUNT:,} tools])": _median_seconds(lambda: agent_with(tools)),
    }
    registered = rows[f"Agent(tools=[{COUNT:,} tools])"]
    verdict = "met" if registered <= TARGET_SECONDS else "**missed**"
    print("| step | seconds (median of 3) |\n|---|---|")
    for label, seconds in rows.items():
        print(f"| {label} | {seconds:.3f} |")
    print(f"\nRegistering ≤ {TARGET_SECONDS:.0f} s: {verdict}")
    return 0 if registered <= TARGET_SECONDS else 1


if __name__ == "__main__":
    sys.exit(main())
