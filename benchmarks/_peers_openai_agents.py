"""openai-agents, on a subclass of ``agents.models.interface.Model``.

Modelled on the SDK's own test ``FakeModel``: ``get_response`` returns Responses-API output
items, ``stream_response`` yields Responses-API stream events ending with
``response.completed``. Runs use ``Runner.run``; the streaming scenario consumes
``Runner.run_streamed(...).stream_events()``. Tracing is disabled.

openai-agents sends no error flag with a failed tool call, only its fixed text
("An error occurred while running the tool..."), so that text marks an error result.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from typing import Any, ClassVar

from agents import Agent, Runner, Tool, function_tool, set_tracing_disabled
from agents.items import (
    ModelResponse,
    TResponseInputItem,
    TResponseOutputItem,
    TResponseStreamEvent,
)
from agents.models.interface import Model, ModelTracing
from agents.usage import Usage
from openai.types.responses import (
    Response,
    ResponseCompletedEvent,
    ResponseFunctionToolCall,
    ResponseOutputItemAddedEvent,
    ResponseOutputItemDoneEvent,
    ResponseOutputMessage,
    ResponseOutputText,
    ResponseTextDeltaEvent,
)

from ._adapter import Adapter, StreamOutcome
from ._script import (
    INSTRUCTIONS,
    PROMPT,
    SCENARIO,
    TOOLS,
    WORKLOADS,
    Reply,
    Scenario,
    Seen,
    Workload,
    reply,
)

__all__ = ["OpenAIAgentsAdapter"]

_ERROR_PREFIX = "An error occurred while running the tool"


def _seen(items: str | list[TResponseInputItem]) -> list[Seen]:
    if isinstance(items, str):
        return []
    seen: list[Seen] = []
    for item in items:
        if isinstance(item, dict) and item.get("type") == "function_call_output":
            text = str(item.get("output", ""))
            seen.append(Seen(text, is_error=text.startswith(_ERROR_PREFIX)))
    return seen


def _message(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id="msg_1",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def _output(answer: Reply) -> list[TResponseOutputItem]:
    if not answer.calls:
        return [_message(answer.text)]
    return [
        ResponseFunctionToolCall(
            type="function_call", id=f"fc_{c.id}", call_id=c.id, name=c.name, arguments=c.arguments
        )
        for c in answer.calls
    ]


def _response(output: list[TResponseOutputItem]) -> Response:
    return Response(
        id="resp_1",
        created_at=0,
        model="bench",
        object="response",
        output=output,
        tool_choice="auto",
        tools=[],
        parallel_tool_calls=True,
        top_p=None,
    )


class _FakeModel(Model):
    """Answers from the shared script, in the Responses-API shapes the runner consumes."""

    def __init__(self, scenario: Scenario) -> None:
        self.scenario: Scenario = scenario

    async def get_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: Sequence[Any],
        output_schema: Any,
        handoffs: Sequence[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None,
        conversation_id: str | None,
        prompt: Any,
    ) -> ModelResponse:
        await asyncio.sleep(0)
        output = _output(reply(self.scenario, _seen(input)))
        return ModelResponse(output=output, usage=Usage(requests=1), response_id=None)

    async def stream_response(
        self,
        system_instructions: str | None,
        input: str | list[TResponseInputItem],
        model_settings: Any,
        tools: Sequence[Any],
        output_schema: Any,
        handoffs: Sequence[Any],
        tracing: ModelTracing,
        *,
        previous_response_id: str | None = None,
        conversation_id: str | None = None,
        prompt: Any = None,
    ) -> AsyncIterator[TResponseStreamEvent]:
        await asyncio.sleep(0)
        answer = reply(self.scenario, _seen(input))
        message = _message("")
        seq = 0
        yield ResponseOutputItemAddedEvent(
            type="response.output_item.added", item=message, output_index=0, sequence_number=seq
        )
        for delta in answer.deltas:
            await asyncio.sleep(0)
            seq += 1
            yield ResponseTextDeltaEvent(
                type="response.output_text.delta",
                item_id=message.id,
                output_index=0,
                content_index=0,
                delta=delta,
                logprobs=[],
                sequence_number=seq,
            )
        final = _message(answer.text)
        yield ResponseOutputItemDoneEvent(
            type="response.output_item.done", item=final, output_index=0, sequence_number=seq + 1
        )
        yield ResponseCompletedEvent(
            type="response.completed", response=_response([final]), sequence_number=seq + 2
        )


def _agent(scenario: Scenario, workload: Workload | None) -> Agent[Any]:
    tools: list[Tool] = (
        [
            function_tool(s.function, name_override=s.name, description_override=s.description)
            for s in TOOLS[workload]
        ]
        if workload is not None
        else []
    )
    return Agent(name="bench", instructions=INSTRUCTIONS, model=_FakeModel(scenario), tools=tools)


class OpenAIAgentsAdapter(Adapter):
    """openai-agents ``Agent`` + ``Runner`` on a fake ``Model``."""

    name: ClassVar[str] = "openai-agents"

    def setup(self) -> None:
        set_tracing_disabled(True)
        self._agents = {w: _agent(SCENARIO[w], w) for w in WORKLOADS}
        self._streaming = _agent("stream", None)

    async def run(self, workload: Workload) -> str:
        result = await Runner.run(self._agents[workload], PROMPT)
        return str(result.final_output)

    async def stream(self) -> StreamOutcome:
        outcome = StreamOutcome()
        result = Runner.run_streamed(self._streaming, PROMPT)
        async for event in result.stream_events():
            if event.type == "raw_response_event" and isinstance(
                event.data, ResponseTextDeltaEvent
            ):
                outcome.saw_delta()
        outcome.text = str(result.final_output)
        return outcome
