"""Governed agents the Temporal governance tests run, in the test process and in workers."""

from __future__ import annotations

import os
import sys

from bastion import Agent, GovernanceOptions, tool
from bastion.core import ModelRequest, ToolMessage, Usage
from bastion.distributed import TemporalAgent
from bastion.governance import Budget, Limit
from bastion.testing import Call, FunctionModel, Turn

METERED_QUEUE = "bastion-test-tgov-metered"
METERED_CALLS = 100
"""The ``calls`` limit every worker of the ``metered`` agent shares."""


@tool(side_effect_class="pure")
def lookup(item: str) -> str:
    """Look an item up."""
    return f"{item}: in stock"


def _spend(request: ModelRequest) -> Turn:
    """Ask for ``lookup`` once, then answer; each answer costs $0.60."""
    cost = Usage(requests=1, prompt_tokens=10, completion_tokens=5, cost_usd=0.6)
    if not any(isinstance(m, ToolMessage) for m in request.messages):
        return Turn(tool_calls=[Call("lookup", {"item": "tea"})], usage=cost)
    return Turn(text="Tea is in stock.", usage=cost)


def spender(queue: str, counters: str) -> TemporalAgent[str]:
    """A $0.50 budget the CFO may raise up to $5: its second model call parks the run."""
    agent = Agent(
        "spender",
        model=FunctionModel(_spend, record_requests=False),
        tools=[lookup],
        budget=Budget(cost_usd=0.5, mutable_by="human:cfo", ceiling=5),
    )
    return TemporalAgent(agent, task_queue=queue, counters=counters)


def _answer(request: ModelRequest) -> Turn:
    del request
    return Turn(text=f"served by {os.getpid()}", usage=Usage(requests=1, cost_usd=0.001))


def metered(counters: str) -> TemporalAgent[str]:
    """One model call a run; all runs share at most ``METERED_CALLS`` model calls."""
    agent = Agent(
        "metered",
        model=FunctionModel(_answer, record_requests=False, yield_to_loop=False),
        governance=GovernanceOptions(
            oracles={"llm": [Limit(type="calls", max=METERED_CALLS, window="day")]}
        ),
    )
    return TemporalAgent(agent, task_queue=METERED_QUEUE, counters=counters)


COUNTERS_ENV = "BASTION_TEST_TGOV_COUNTERS"


def cli_spender() -> TemporalAgent[str]:
    """``spender`` for the CLI tests: its counters' URL comes from ``COUNTERS_ENV``."""
    return spender("bastion-test-tgov-cli", os.environ[COUNTERS_ENV])


if __name__ == "__main__":
    sys.exit("import this module; run tests/distributed/_governed_worker.py to start a worker")
