"""pydantic-ai, on its own test double ``pydantic_ai.models.function.FunctionModel``.

Runs use ``agent.run``, which calls the model's ``function``; the streaming scenario uses
``agent.run_stream`` + ``stream_text(delta=True, debounce_by=None)`` (every delta, no
batching), which calls its ``stream_function``. (``run_stream_events`` and ``iter`` were
measured too: ``run_stream_events`` is about 25% slower per delta, ``iter`` about the
same.) Both functions are ``async`` (a sync one would be sent to a worker thread) and
yield to the loop once per request and once per text delta. Instrumentation is off by
default (no logfire).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from pydantic_ai import Agent, Tool
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelResponse,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, FunctionModel

from ._adapter import Adapter, StreamOutcome
from ._script import (
    INSTRUCTIONS,
    PROMPT,
    SCENARIO,
    TOOLS,
    WORKLOADS,
    Scenario,
    Seen,
    Workload,
    reply,
)

__all__ = ["PydanticAIAdapter"]


def _seen(messages: list[ModelMessage]) -> list[Seen]:
    """The tool results in the request; a validation retry is an error result."""
    return [
        Seen(part.model_response_str(), is_error=part.outcome != "success")
        for message in messages
        if isinstance(message, ModelRequest)
        for part in message.parts
        if isinstance(part, ToolReturnPart)
    ]


def _model(scenario: Scenario) -> FunctionModel:
    async def respond(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        await asyncio.sleep(0)
        answer = reply(scenario, _seen(messages))
        if answer.calls:
            return ModelResponse(
                parts=[ToolCallPart(c.name, c.arguments, tool_call_id=c.id) for c in answer.calls]
            )
        return ModelResponse(parts=[TextPart(answer.text)])

    async def stream(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
        await asyncio.sleep(0)
        for delta in reply(scenario, _seen(messages)).deltas:
            await asyncio.sleep(0)
            yield delta

    return FunctionModel(respond, stream_function=stream, model_name=f"bench-{scenario}")


def _agent(scenario: Scenario, workload: Workload | None) -> Agent[None, str]:
    tools: list[Tool[Any]] = (
        [Tool(s.function, name=s.name, description=s.description) for s in TOOLS[workload]]
        if workload is not None
        else []
    )
    return Agent(_model(scenario), name="bench", instructions=INSTRUCTIONS, tools=tools)


class PydanticAIAdapter(Adapter):
    """pydantic-ai ``Agent`` on ``FunctionModel``."""

    name: ClassVar[str] = "pydantic-ai"

    def setup(self) -> None:
        self._agents = {w: _agent(SCENARIO[w], w) for w in WORKLOADS}
        self._streaming = _agent("stream", None)

    async def run(self, workload: Workload) -> str:
        result = await self._agents[workload].run(PROMPT)
        return result.output

    async def stream(self) -> StreamOutcome:
        outcome = StreamOutcome()
        async with self._streaming.run_stream(PROMPT) as result:
            async for _ in result.stream_text(delta=True, debounce_by=None):
                outcome.saw_delta()
            outcome.text = await result.get_output()
        return outcome
