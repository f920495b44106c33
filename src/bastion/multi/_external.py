"""External agents: any async function (or another framework's agent) as a Bastion agent.

:func:`external_agent` wraps ``fn(input, ctx)`` — a coroutine returning the output (or an
:class:`ExternalOutput` with the usage it spent), or an async generator of text pieces —
into an :class:`ExternalAgent`, which runs, streams and fails like an ``Agent``:
``agent.start``, the text (``text.delta`` for each piece, then ``text.complete``) and
``agent.end``; on failure ``agent.error`` and ``agent.end`` (status ``failed``), after which
the exception is raised again to the caller.

Durability: with a store, a run given a ``run_id`` is journaled as a run of its own
(``_composite``): when it is asked again with the same ``run_id`` (a resumed parent, another
process), the journaled output is returned and ``fn`` is not called again. As a tool
(:meth:`ExternalAgent.as_tool`) the run id is derived from the parent's run and tool call,
and the parent's store is used when the external agent has none.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, TypeAlias, cast

from bastion.agent._scope import live_scope
from bastion.agent._state import RunState
from bastion.agent.steps._end import end_event
from bastion.core import (
    AgentErrorEvent,
    AgentEvent,
    AgentStartEvent,
    AssistantMessage,
    RunContext,
    TextCompleteEvent,
    TextDeltaEvent,
    TextPart,
    Usage,
    UserError,
    UserMessage,
    new_id,
)
from bastion.tools import render_output

from ._composite import CompositeLog, Part
from ._own_stream import OwnStream
from ._own_tool import own_tool

if TYPE_CHECKING:
    from bastion.agent._result import RunResult
    from bastion.core import EventBus, JsonObject, JsonValue
    from bastion.stores import Stores
    from bastion.tools import Tool

__all__ = [
    "ExternalAgent",
    "ExternalContext",
    "ExternalFunction",
    "ExternalOutput",
    "external_agent",
]


@dataclass(frozen=True, kw_only=True, slots=True)
class ExternalContext:
    """What an external agent's function is told about its run."""

    run_id: str
    agent_name: str
    metadata: dict[str, object] = field(default_factory=dict[str, object])


@dataclass(frozen=True, kw_only=True, slots=True)
class ExternalOutput:
    """An external function's output with the usage it spent (to add to its parent's)."""

    output: object
    usage: Usage = field(default_factory=Usage)


ExternalFunction: TypeAlias = Callable[
    [str, ExternalContext], "Awaitable[object] | AsyncIterator[str]"
]


def external_agent(
    name: str,
    fn: ExternalFunction,
    *,
    description: str = "",
    store: Stores | None = None,
    event_bus: EventBus | None = None,
) -> ExternalAgent:
    """Wrap ``fn(input, ctx)`` as an agent (see :class:`ExternalAgent`).

    Example (a pydantic-ai agent)::

        async def summarize(input: str, ctx: ExternalContext) -> ExternalOutput:
            result = await pydantic_ai_agent.run(input)
            spent = result.usage
            usage = Usage(prompt_tokens=spent.input_tokens, completion_tokens=spent.output_tokens)
            return ExternalOutput(output=result.output, usage=usage)


        summarizer = external_agent("summarizer", summarize)

    Raises:
        UserError: ``name`` is empty or ``fn`` is not callable.
    """
    return ExternalAgent(name, fn, description=description, store=store, event_bus=event_bus)


class ExternalAgent:
    """An async function run like an agent: same events, same failure rules, journaled."""

    __slots__ = ("_fn", "description", "event_bus", "name", "store")

    def __init__(
        self,
        name: str,
        fn: ExternalFunction,
        *,
        description: str = "",
        store: Stores | None = None,
        event_bus: EventBus | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"External agent name must be a non-empty string, got {name!r}.")
        if not callable(fn):
            raise UserError(f"External agent {name!r}: fn must be an async function, got {fn!r}.")
        self.name = name
        self._fn = fn
        self.description = description
        self.store = store
        self.event_bus = event_bus

    def __repr__(self) -> str:
        return f"ExternalAgent({self.name!r})"

    def stream(
        self,
        input: str,
        *,
        metadata: Mapping[str, object] | None = None,
        run_id: str | None = None,
        store: Stores | None = None,
    ) -> OwnStream:
        """Start a run on ``input`` and stream its events.

        Args:
            input: The task.
            metadata: Given to the function as ``ctx.metadata``.
            run_id: The run's id; with a store, a run id already journaled returns the
                journaled output without calling the function.
            store: Journal here (default: the agent's ``store``).
        """
        if not isinstance(input, str):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"External agent {self.name!r} takes a string input, got {input!r}.")
        rid = run_id or new_id("run")
        ctx = ExternalContext(run_id=rid, agent_name=self.name, metadata=dict(metadata or {}))
        stores = store if store is not None else self.store
        return OwnStream(
            rid,
            self.name,
            lambda stream: self._events(stream, input, ctx, stores),
            self.event_bus,
        )

    async def run(
        self, input: str, *, metadata: Mapping[str, object] | None = None, run_id: str | None = None
    ) -> RunResult[object]:
        """Run to the end and return the result; the function's exception is raised again."""
        return await self.stream(input, metadata=metadata, run_id=run_id).drain()

    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """This external agent as a tool: the model calls it with ``{"input": "<task>"}``."""

        async def call(ctx: RunContext[object], input: str) -> str:
            scope = live_scope(ctx.run_id)
            store = self.store or (scope.config.store if scope is not None else None)
            run_id = f"{ctx.run_id}:{ctx.tool_call_id}"
            result = await self.run_in(input, run_id=run_id, store=store)
            return result.text

        return own_tool(self, call, name, description, "agent", "external_stateful")

    async def run_in(self, input: str, *, run_id: str, store: Stores | None) -> RunResult[object]:
        """Run journaled as ``run_id`` in ``store`` (a tool's call)."""
        return await self.stream(input, run_id=run_id, store=store).drain()

    async def _events(
        self, stream: OwnStream, input: str, ctx: ExternalContext, stores: Stores | None
    ) -> AsyncGenerator[AgentEvent, None]:
        rid = ctx.run_id
        state = RunState(run_id=rid, agent_name=self.name, metadata=ctx.metadata)
        state.messages.append(UserMessage(content=input))
        yield AgentStartEvent(run_id=rid, agent_name=self.name, model="external")
        log = None
        if stores is not None:
            await stores.open()
            log = await CompositeLog.open(
                stores, rid, name=self.name, kind="external", metadata=ctx.metadata
            )
        done = log.done.get("result") if log is not None else None
        pieces: list[str] = []
        if done is not None:  # journaled by an earlier attempt: not called again
            output, usage = done.record.get("output"), done.usage
            text = str(done.record.get("text", ""))
            if text:
                yield TextDeltaEvent(run_id=rid, delta=text)
        else:
            box: list[object] = []
            try:
                async for piece in self._call(stream, input, ctx, box):
                    pieces.append(piece)
                    yield TextDeltaEvent(run_id=rid, delta=piece)  # live, as fn yields it
            except asyncio.CancelledError:
                if not stream.aborted:
                    raise
                state.abort()  # the caller aborted the run: the function was cancelled
                if log is not None:
                    await log.finish("aborted", None, Usage())
                stream.set_result(state.result())
                yield end_event(state)
                return
            except Exception as exc:
                state.fail("external_error", f"{type(exc).__name__}: {exc}", exc)
                if log is not None:
                    await log.finish("failed", None, Usage())
                stream.set_result(state.result())
                yield AgentErrorEvent(run_id=rid, code="external_error", message=str(exc))
                yield end_event(state)
                raise
            output, usage = _split(box[0])
            text = "".join(pieces) if pieces else _text(output)
            if log is not None:
                record: JsonObject = {"output": _jsonable(output), "text": text}
                part = Part(
                    key="result", name=self.name, record=record, usage=usage, is_error=False
                )
                await log.record(part, model=f"external:{self.name}")
        if text:
            yield TextCompleteEvent(run_id=rid, text=text)
        state.messages.append(AssistantMessage(parts=[TextPart(text=text)], model="external"))
        if usage.requests or usage.total_tokens:
            state.add_usage(f"external:{self.name}", usage)
        state.complete(output)
        if log is not None:
            await log.finish("completed", _jsonable(output), usage)
        stream.set_result(state.result())
        yield end_event(state)

    async def _call(
        self, stream: OwnStream, input: str, ctx: ExternalContext, box: list[object]
    ) -> AsyncGenerator[str, None]:
        """Call the function in a task an abort cancels; yield its text pieces as they come.

        Its return value lands in ``box``; its exception is raised here.
        """
        queue: asyncio.Queue[str | None] = asyncio.Queue()
        task = asyncio.ensure_future(self._invoke(input, ctx, queue))
        task.add_done_callback(lambda _: queue.put_nowait(None))

        def stop(drain: bool) -> None:
            if not drain:
                task.cancel()

        remove = stream.on_abort(stop)
        try:
            while (piece := await queue.get()) is not None:
                yield piece
            box.append(task.result())
        finally:
            remove()
            if not task.done():  # the consumer stopped early
                task.cancel()

    async def _invoke(
        self, input: str, ctx: ExternalContext, queue: asyncio.Queue[str | None]
    ) -> object:
        value = self._fn(input, ctx)
        if inspect.isasyncgen(value) or isinstance(value, AsyncIterator):
            iterator: AsyncIterator[str] = value  # pyright: ignore[reportAssignmentType]
            pieces: list[str] = []
            async for piece in iterator:
                pieces.append(str(piece))
                queue.put_nowait(pieces[-1])
            return "".join(pieces)
        if inspect.isawaitable(value):
            return await value
        return value


def _split(value: object) -> tuple[object, Usage]:
    if isinstance(value, ExternalOutput):
        return value.output, value.usage
    return value, Usage()


def _text(output: object) -> str:
    return render_output(output)


def _jsonable(value: object) -> JsonValue:
    from pydantic_core import to_jsonable_python

    return cast("JsonValue", to_jsonable_python(value, fallback=str))
