"""The sub-agent benchmark stays honest: every timed agent gives the child's answer."""

from __future__ import annotations

from benchmarks._script import PROMPT
from benchmarks.subagent import EXPECTED, agents


async def test_every_timed_agent_answers_with_the_childs_output() -> None:
    for label, agent in agents().items():
        result = await agent.run(PROMPT)
        assert (label, result.output) == (label, EXPECTED)
        if "as_tool" in label:  # the child's 4 model calls join the parent's 2
            assert result.usage.requests == 6
