"""The floor: the same agent work, hand-rolled on asyncio with no framework.

What a careful engineer would write by hand: a fake streaming model (one loop yield per
request and per text delta), pydantic validation of the JSON arguments before the tool
body runs, sync tools in a worker thread (``asyncio.to_thread``), one step's calls run
together with ``asyncio.gather``, and an event stream that ``run`` drains. No tracing,
hooks, usage accounting or message normalisation: the cost any runtime starts from.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Literal, TypeAlias, get_type_hints

from pydantic import BaseModel, ValidationError, create_model

from ._adapter import Adapter, StreamOutcome
from ._script import (
    INSTRUCTIONS,
    PROMPT,
    SCENARIO,
    TOOLS,
    WORKLOADS,
    Call,
    Scenario,
    Seen,
    ToolSpec,
    Workload,
    reply,
)

__all__ = ["FloorAdapter"]

Event: TypeAlias = tuple[Literal["delta", "end"], str]


@dataclass(slots=True)
class _Message:
    role: Literal["system", "user", "assistant", "tool"]
    text: str = ""
    calls: tuple[Call, ...] = ()
    is_error: bool = False


@dataclass(slots=True)
class _Tool:
    name: str
    function: Callable[..., Any]
    args_model: type[BaseModel]
    is_async: bool

    @classmethod
    def of(cls, spec: ToolSpec) -> _Tool:
        hints = get_type_hints(spec.function)
        fields: dict[str, Any] = {
            p: (hints[p], ...) for p in inspect.signature(spec.function).parameters
        }
        args_model = create_model(f"{spec.name}_args", **fields)
        return cls(spec.name, spec.function, args_model, inspect.iscoroutinefunction(spec.function))

    async def call(self, arguments: str) -> _Message:
        try:
            kwargs = self.args_model.model_validate_json(arguments).model_dump()
        except ValidationError as exc:
            return _Message("tool", f"invalid arguments for {self.name}: {exc}", is_error=True)
        if self.is_async:
            result = await self.function(**kwargs)
        else:
            result = await asyncio.to_thread(self.function, **kwargs)
        return _Message("tool", str(result))


async def _model(scenario: Scenario, messages: Sequence[_Message]) -> AsyncIterator[str | Call]:
    """A fake streaming model: text deltas, then tool calls."""
    await asyncio.sleep(0)
    answer = reply(scenario, [Seen(m.text, m.is_error) for m in messages if m.role == "tool"])
    for delta in answer.deltas:
        await asyncio.sleep(0)
        yield delta
    if answer.text and not answer.deltas:
        yield answer.text
    for call in answer.calls:
        yield call


@dataclass(slots=True)
class _Agent:
    scenario: Scenario
    tools: dict[str, _Tool] = field(default_factory=dict[str, _Tool])

    async def stream(self, prompt: str) -> AsyncIterator[Event]:
        messages = [_Message("system", INSTRUCTIONS), _Message("user", prompt)]
        while True:
            text: list[str] = []
            calls: list[Call] = []
            async for item in _model(self.scenario, messages):
                if isinstance(item, str):
                    text.append(item)
                    yield ("delta", item)
                else:
                    calls.append(item)
            messages.append(_Message("assistant", "".join(text), tuple(calls)))
            if not calls:
                yield ("end", messages[-1].text)
                return
            messages.extend(await asyncio.gather(*(self._call(c) for c in calls)))

    async def run(self, prompt: str) -> str:
        output = ""
        async for kind, value in self.stream(prompt):
            if kind == "end":
                output = value
        return output

    async def _call(self, call: Call) -> _Message:
        found = self.tools.get(call.name)
        if found is None:
            return _Message("tool", f"unknown tool {call.name!r}", is_error=True)
        return await found.call(call.arguments)


class FloorAdapter(Adapter):
    """The hand-rolled asyncio loop."""

    name: ClassVar[str] = "floor"

    def setup(self) -> None:
        self._agents = {
            w: _Agent(SCENARIO[w], {s.name: _Tool.of(s) for s in TOOLS[w]}) for w in WORKLOADS
        }
        self._streaming = _Agent("stream")

    async def run(self, workload: Workload) -> str:
        return await self._agents[workload].run(PROMPT)

    async def stream(self) -> StreamOutcome:
        outcome = StreamOutcome()
        async for kind, value in self._streaming.stream(PROMPT):
            if kind == "delta":
                outcome.saw_delta()
            else:
                outcome.text = value
        return outcome
