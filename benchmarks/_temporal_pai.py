"""pydantic-ai's Temporal integration on the S1 work, for ``benchmarks.temporal``.

Its own module: Temporal's sandbox re-imports a workflow's module for every run, so it
imports only pydantic-ai and temporalio.
"""

from __future__ import annotations

from pydantic_ai import Agent
from pydantic_ai.durable_exec.temporal import TemporalDurability
from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
from pydantic_ai.models.function import AgentInfo, FunctionModel
from temporalio import workflow

CALLS = 3


def _results(messages: list[ModelMessage]) -> list[str]:
    return [
        str(part.content)
        for message in messages
        for part in message.parts
        if part.part_kind == "tool-return"
    ]


async def _respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
    seen = _results(messages)
    if len(seen) < CALLS:
        return ModelResponse(parts=[ToolCallPart("add", {"a": len(seen) + 1, "b": 1})])
    return ModelResponse(parts=[TextPart("done: " + ",".join(seen))])


pai_agent = Agent(
    FunctionModel(_respond, model_name="bench"), name="pai_s1", capabilities=[TemporalDurability()]
)


@pai_agent.tool_plain
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@workflow.defn
class PaiS1Workflow:
    """One S1 run of the pydantic-ai agent."""

    @workflow.run
    async def run(self, prompt: str) -> str:
        """Run the agent to its answer."""
        result = await pai_agent.run(prompt)
        return result.output
