"""Bastion, on its own test double ``bastion.testing.FunctionModel``.

Runs use ``agent.run``; the streaming scenario iterates ``agent.stream(...)`` and counts
``text.delta`` events. For runs the model function is ``async`` and yields to the loop once
per request itself, with ``yield_to_loop=False`` so that a tool call arrives in one piece
as it does for every peer (with ``yield_to_loop=True`` ``FunctionModel`` also yields before
each tool-call start, arguments and end chunk: three extra loop turns per call). The
streaming model keeps ``yield_to_loop=True``: one yield per request and per delta.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any, ClassVar

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.testing import Call, FunctionModel, Turn

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

__all__ = ["BastionAdapter"]


def _seen(request: ModelRequest) -> list[Seen]:
    return [Seen(m.text, m.is_error) for m in request.messages if isinstance(m, ToolMessage)]


def _model(scenario: Scenario) -> FunctionModel:
    async def respond(request: ModelRequest) -> Turn | str:
        await asyncio.sleep(0)
        answer = reply(scenario, _seen(request))
        if answer.calls:
            return Turn(tool_calls=[Call(c.name, c.args, id=c.id) for c in answer.calls])
        return answer.text

    return FunctionModel(
        respond, name=f"bench-{scenario}", yield_to_loop=False, record_requests=False
    )


def _streaming_model() -> FunctionModel:
    async def deltas(request: ModelRequest) -> AsyncIterator[str]:
        for delta in reply("stream", _seen(request)).deltas:
            yield delta

    return FunctionModel(stream_function=deltas, name="bench-stream", record_requests=False)


class BastionAdapter(Adapter):
    """Bastion ``Agent`` on ``FunctionModel``."""

    name: ClassVar[str] = "bastion"

    def setup(self) -> None:
        self._agents: dict[Workload, Agent[Any, str]] = {
            w: Agent(
                "bench",
                model=_model(SCENARIO[w]),
                instructions=INSTRUCTIONS,
                tools=[
                    tool(
                        s.function,
                        name=s.name,
                        description=s.description,
                        side_effect_class="pure",
                    )
                    for s in TOOLS[w]
                ],
            )
            for w in WORKLOADS
        }
        self._streaming: Agent[Any, str] = Agent(
            "bench", model=_streaming_model(), instructions=INSTRUCTIONS
        )

    async def run(self, workload: Workload) -> str:
        result = await self._agents[workload].run(PROMPT)
        result.raise_for_status()
        return str(result.output)

    async def stream(self) -> StreamOutcome:
        outcome = StreamOutcome()
        run = self._streaming.stream(PROMPT)
        async for event in run:
            if event.type == "text.delta":
                outcome.saw_delta()
        outcome.text = str(run.result.output)
        return outcome
