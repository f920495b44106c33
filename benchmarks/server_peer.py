"""S11's peer: a minimal FastAPI app streaming a pydantic-ai agent's runs over SSE.

What a team would write without Bastion's server: ``POST /runs`` starts
``agent.run_stream_events`` in a task, every event gets the next id of its run and is kept in
a list in memory (no store: a restart loses every run), and ``GET /runs/{id}/events`` sends the
kept events after ``Last-Event-ID``, then the live ones, as Server-Sent Events. Events are
encoded with pydantic-ai's own ``AgentStreamEvent`` type adapter; a text part's start and its
deltas go out as ``text.delta`` and the run's result as ``agent.end`` (``completed``), so the
benchmark's client and checks are the same as for Bastion.

The agent is Bastion's S11 agent in pydantic-ai: one tool waiting on the shared gate, then a
``deltas``-word answer from a zero-latency ``FunctionModel`` stream function.
"""

from __future__ import annotations

import asyncio
import json
import time
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI, Request
from fastapi.responses import StreamingResponse
from pydantic import TypeAdapter
from pydantic_ai import Agent
from pydantic_ai.messages import (
    AgentStreamEvent,
    ModelMessage,
    ModelRequest,
    PartDeltaEvent,
    PartStartEvent,
    TextPart,
    TextPartDelta,
    ToolReturnPart,
)
from pydantic_ai.models.function import AgentInfo, DeltaToolCall, DeltaToolCalls, FunctionModel
from pydantic_ai.run import AgentRunResultEvent

__all__ = ["peer_app"]

_EVENT = TypeAdapter[AgentStreamEvent](AgentStreamEvent)
_Sent = tuple[int, str, str]  # id, event type, JSON data


def _agent(gate: asyncio.Event, deltas: int) -> Agent[None, str]:
    answer = [f"w{i} " for i in range(deltas)]

    async def stream(
        messages: list[ModelMessage], info: AgentInfo
    ) -> AsyncIterator[str | DeltaToolCalls]:
        returned = any(
            isinstance(p, ToolReturnPart)
            for m in messages
            if isinstance(m, ModelRequest)
            for p in m.parts
        )
        if returned:
            for delta in answer:
                yield delta
        else:
            yield {0: DeltaToolCall(name="wait_for_go", json_args="{}", tool_call_id="c1")}

    agent = Agent(FunctionModel(stream_function=stream, model_name="bench"))

    @agent.tool_plain
    async def wait_for_go() -> str:  # pyright: ignore[reportUnusedFunction]
        """Wait until every stream is connected."""
        await gate.wait()
        return "go"

    return agent


def _encode(event: AgentStreamEvent | AgentRunResultEvent[Any]) -> tuple[str, str]:
    if isinstance(event, AgentRunResultEvent):
        return "agent.end", json.dumps({"status": "completed", "output": event.result.output})
    if isinstance(event, PartStartEvent) and isinstance(event.part, TextPart):
        return "text.delta", json.dumps({"delta": event.part.content})
    if isinstance(event, PartDeltaEvent) and isinstance(event.delta, TextPartDelta):
        return "text.delta", json.dumps({"delta": event.delta.content_delta})
    return event.event_kind, _EVENT.dump_json(event).decode()


@dataclass(kw_only=True, slots=True)
class _Run:
    sent: list[_Sent] = field(default_factory=list[_Sent])
    followers: set[asyncio.Queue[_Sent | None]] = field(
        default_factory=set[asyncio.Queue[_Sent | None]]
    )
    done: bool = False


@dataclass(kw_only=True, slots=True)
class PeerStamps:
    """When each (run, id) was handed to the run's followers."""

    at: dict[tuple[str, int], float] = field(default_factory=dict[tuple[str, int], float])


def peer_app(gate: asyncio.Event, deltas: int, stamps: PeerStamps) -> FastAPI:
    """The FastAPI app serving the S11 agent in pydantic-ai; ``stamps`` notes each hand-off."""
    agent = _agent(gate, deltas)
    runs: dict[str, _Run] = {}
    tasks: set[asyncio.Task[None]] = set()
    app = FastAPI()

    async def drive(run_id: str, run: _Run, prompt: str) -> None:
        try:
            async with agent.run_stream_events(prompt) as stream:
                async for event in stream:
                    kind, data = _encode(event)
                    item = (len(run.sent) + 1, kind, data)
                    run.sent.append(item)
                    stamps.at[run_id, item[0]] = time.perf_counter()
                    for queue in run.followers:
                        queue.put_nowait(item)
        finally:
            run.done = True
            for queue in run.followers:
                queue.put_nowait(None)

    @app.post("/runs")
    async def start(body: dict[str, Any]) -> dict[str, str]:  # pyright: ignore[reportUnusedFunction]
        run_id = uuid.uuid4().hex
        run = runs[run_id] = _Run()
        task = asyncio.create_task(drive(run_id, run, str(body["input"])))
        tasks.add(task)
        task.add_done_callback(tasks.discard)
        return {"run_id": run_id}

    @app.get("/runs/{run_id}/events")
    async def events(run_id: str, request: Request) -> StreamingResponse:  # pyright: ignore[reportUnusedFunction]
        run = runs[run_id]
        after = int(request.headers.get("last-event-id", "0"))
        return StreamingResponse(_sse(run, after), media_type="text/event-stream")

    return app


async def _sse(run: _Run, after: int) -> AsyncIterator[bytes]:
    queue: asyncio.Queue[_Sent | None] = asyncio.Queue()
    run.followers.add(queue)
    try:
        for item in run.sent[after:]:
            yield _frame(item)
            after = item[0]
        while not run.done or not queue.empty():
            item = await queue.get()
            if item is None:
                break
            if item[0] > after:
                yield _frame(item)
                after = item[0]
    finally:
        run.followers.discard(queue)


def _frame(item: _Sent) -> bytes:
    return f"id: {item[0]}\nevent: {item[1]}\ndata: {item[2]}\n\n".encode()
