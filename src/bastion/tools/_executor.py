"""Dispatches the tool calls of one step (SPEC G-21, G-29..G-32, T-05, T-06).

Calls are validated first (unknown names and invalid arguments become error results that
list what was wrong), then run with bounded parallelism; a ``sequential`` tool waits for
everything before it and blocks everything after it. ``tool.execute.start`` is emitted for
every call up front in call order; ``end``/``error`` events follow in call order whatever
the completion order; only ``progress``/``partial`` events interleave live.

Called by the agent loop's dispatch step (``bastion.agent.steps``).
"""

from __future__ import annotations

import asyncio
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Awaitable,
    Callable,
    Coroutine,
    Mapping,
    Sequence,
)
from dataclasses import dataclass, field
from typing import Any, Protocol

from bastion.core import (
    AgentEvent,
    Clock,
    RunContext,
    ToolCall,
    ToolErrorKind,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteStartEvent,
)

from ._invoke import DeadlineExceeded, ProgressQueue, ProgressSink, invoke
from ._result import render_output
from ._schema import ToolArgumentsError
from ._tool import Tool, ToolResult

__all__ = ["SkipTool", "ToolBatch", "ToolCallHooks", "ToolExecutor", "ToolOutcome", "end_event"]


@dataclass(kw_only=True, slots=True)
class ToolOutcome:
    """What one call produced: the text the model reads, and whether it is an error."""

    call: ToolCall
    content: str
    is_error: bool = False
    error_kind: ToolErrorKind | None = None
    duration: float = 0.0
    metadata: dict[str, Any] = field(default_factory=dict)


@dataclass(kw_only=True, slots=True)
class SkipTool:
    """Returned by a ``before`` hook: do not run the tool; use ``result`` instead."""

    result: Any


class ToolCallHooks(Protocol):
    """Interception points the agent layer plugs into the executor."""

    async def before(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> SkipTool | None:
        """Called after validation, before the tool runs."""
        ...

    async def after(self, tool: Tool, call: ToolCall, content: str) -> str:
        """Called with the rendered result; returns the (possibly replaced) result."""
        ...


@dataclass(slots=True)
class _Prepared:
    index: int
    call: ToolCall
    tool: Tool | None
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    outcome: ToolOutcome | None = None


class ToolExecutor:
    """Runs tool calls against a fixed set of tools.

    Args:
        tools: The tools by name.
        max_parallel: How many calls of one step may run at once (1 = serial).
        clock: Measures durations.
    """

    def __init__(self, tools: Mapping[str, Tool], *, max_parallel: int, clock: Clock) -> None:
        self.tools = tools
        self.max_parallel = max_parallel
        self.clock = clock

    def batch(
        self,
        calls: Sequence[ToolCall],
        ctx: RunContext[Any],
        *,
        next_seq: Callable[[], int],
        hooks: ToolCallHooks | None = None,
    ) -> ToolBatch:
        """Prepare the calls of one step; iterate :meth:`ToolBatch.events` to run them."""
        prepared = [self._prepare(i, call) for i, call in enumerate(calls)]
        return ToolBatch(self, prepared, ctx, next_seq, hooks)

    def _prepare(self, index: int, call: ToolCall) -> _Prepared:
        tool = self.tools.get(call.name)
        if tool is None:
            available = ", ".join(repr(n) for n in sorted(self.tools)) or "none"
            return _Prepared(
                index=index,
                call=call,
                tool=None,
                outcome=ToolOutcome(
                    call=call,
                    content=f"Unknown tool {call.name!r}. Available tools: {available}.",
                    is_error=True,
                    error_kind="unknown_tool",
                ),
            )
        try:
            args, kwargs = tool.validator.validate(call.arguments)
        except ToolArgumentsError as exc:
            return _Prepared(
                index=index,
                call=call,
                tool=tool,
                outcome=ToolOutcome(
                    call=call,
                    content=exc.for_model(tool.name),
                    is_error=True,
                    error_kind="invalid_input",
                ),
            )
        return _Prepared(index=index, call=call, tool=tool, args=args, kwargs=kwargs)


class ToolBatch:
    """The calls of one step. Iterate :meth:`events`; then read :attr:`outcomes`.

    After an interruption (abort), calls that did not finish have no outcome (``None``).
    """

    def __init__(
        self,
        executor: ToolExecutor,
        prepared: list[_Prepared],
        ctx: RunContext[Any],
        next_seq: Callable[[], int],
        hooks: ToolCallHooks | None,
    ) -> None:
        self._executor = executor
        self._prepared = prepared
        self._ctx = ctx
        self._next_seq = next_seq
        self._hooks = hooks
        self.outcomes: list[ToolOutcome | None] = [p.outcome for p in prepared]
        self.emitted = 0

    async def events(self) -> AsyncGenerator[AgentEvent, None]:
        """Run the calls, yielding their lifecycle events."""
        run_id = self._ctx.run_id
        next_seq = self._next_seq
        for p in self._prepared:
            yield ToolExecuteStartEvent(
                run_id=run_id,
                seq=next_seq(),
                tool_call_id=p.call.id,
                tool_name=p.call.name,
                arguments=p.call.arguments,
            )
        runnable = [p for p in self._prepared if p.outcome is None]
        if not runnable or (len(runnable) == 1 and self._cannot_stream(runnable[0])):
            for p in runnable:
                self.outcomes[p.index] = await self._execute(p, None)
            for outcome in self.outcomes:
                yield self._end_event(outcome)  # type: ignore[arg-type]  # all set above
                self.emitted += 1
            return
        async for event in self._run_concurrently(runnable):
            yield event

    @staticmethod
    def _cannot_stream(p: _Prepared) -> bool:
        tool = p.tool
        return tool is not None and tool.kind != "async_gen" and not tool.takes_ctx

    async def _run_concurrently(self, runnable: list[_Prepared]) -> AsyncIterator[AgentEvent]:
        queue: ProgressQueue = asyncio.Queue()
        total = len(self.outcomes)
        # A call's end event may go out only after its completion marker came through the
        # queue, so every progress event it queued before finishing is yielded first.
        ready = [outcome is not None for outcome in self.outcomes]
        runner = asyncio.create_task(self._run_groups(runnable, queue))
        try:
            while True:
                while self.emitted < total and ready[self.emitted]:
                    yield self._end_event(self.outcomes[self.emitted])  # type: ignore[arg-type]
                    self.emitted += 1
                if self.emitted == total:
                    break
                item = await queue.get()
                if isinstance(item, int):
                    ready[item] = True
                else:
                    item.seq = self._next_seq()  # numbered as emitted, not as queued
                    yield item
            await runner
        finally:
            if not runner.done():
                runner.cancel()
                await asyncio.gather(runner, return_exceptions=True)

    async def _run_groups(self, runnable: list[_Prepared], queue: ProgressQueue) -> None:
        limit = asyncio.Semaphore(self._executor.max_parallel)

        async def run(p: _Prepared) -> None:
            async with limit:
                self.outcomes[p.index] = await self._execute(p, queue)
            queue.put_nowait(p.index)

        group: list[_Prepared] = []
        for p in runnable:
            if p.tool is not None and p.tool.execution_mode == "sequential":
                await self._run_group(group, run)
                group = []
                await run(p)
            else:
                group.append(p)
        await self._run_group(group, run)

    @staticmethod
    async def _run_group(
        group: list[_Prepared], run: Callable[[_Prepared], Coroutine[Any, Any, None]]
    ) -> None:
        if len(group) == 1:
            await run(group[0])
        elif group:
            async with asyncio.TaskGroup() as tg:
                for p in group:
                    tg.create_task(run(p))

    def unreported(self) -> list[tuple[ToolCall, ToolOutcome | None]]:
        """Calls whose end event was not emitted (the batch was interrupted), in call order.

        A call without an outcome did not finish.
        """
        return [(p.call, self.outcomes[p.index]) for p in self._prepared[self.emitted :]]

    def _end_event(self, outcome: ToolOutcome) -> AgentEvent:
        return end_event(outcome, self._ctx.run_id, self._next_seq())

    async def _execute(self, p: _Prepared, queue: ProgressQueue | None) -> ToolOutcome:
        tool = p.tool
        assert tool is not None  # only runnable calls get here
        clock = self._executor.clock
        started = clock.monotonic()
        call = p.call
        hooks = self._hooks
        metadata: dict[str, Any] = {}
        try:
            skip = await hooks.before(tool, call, _args_view(p)) if hooks is not None else None
            if skip is not None:
                value: Any = skip.result
            else:
                value = await self._invoke(tool, p, queue)
            if isinstance(value, ToolResult):
                metadata = value.metadata
                value = value.output
            content = render_output(value)
            if hooks is not None:
                content = await hooks.after(tool, call, content)
        except DeadlineExceeded:
            return ToolOutcome(
                call=call,
                content=f"Tool {tool.name!r} timed out after {tool.timeout} s.",
                is_error=True,
                error_kind="timeout",
                duration=clock.monotonic() - started,
            )
        except asyncio.CancelledError as exc:
            task = asyncio.current_task()
            if task is None or task.cancelling():
                raise  # the batch is being cancelled (an abort): let it through
            # The tool raised CancelledError itself: a failure like any other.
            return _failed(tool, call, exc, clock.monotonic() - started)
        except Exception as exc:  # a tool failure is a value for the model, not a crash
            return _failed(tool, call, exc, clock.monotonic() - started)
        return ToolOutcome(
            call=call, content=content, duration=clock.monotonic() - started, metadata=metadata
        )

    def _invoke(self, tool: Tool, p: _Prepared, queue: ProgressQueue | None) -> Awaitable[Any]:
        args = p.args
        sink: ProgressSink | None = None
        if tool.takes_ctx or tool.kind == "async_gen":
            sink = ProgressSink(queue, self._ctx.run_id, p.call.id)
            if tool.takes_ctx:
                args = (self._ctx.for_tool_call(p.call.id, tool.name, sink), *args)
        return invoke(tool, args, p.kwargs, sink, self._executor.clock)


def end_event(outcome: ToolOutcome, run_id: str, seq: int) -> AgentEvent:
    """The ``tool.execute.end`` (or ``tool.execute.error``) event of an outcome."""
    call = outcome.call
    if outcome.is_error:
        return ToolExecuteErrorEvent(
            run_id=run_id,
            seq=seq,
            tool_call_id=call.id,
            tool_name=call.name,
            kind=outcome.error_kind or "execution_failed",
            message=outcome.content,
            duration=outcome.duration,
        )
    return ToolExecuteEndEvent(
        run_id=run_id,
        seq=seq,
        tool_call_id=call.id,
        tool_name=call.name,
        result=outcome.content,
        duration=outcome.duration,
    )


def _failed(tool: Tool, call: ToolCall, exc: BaseException, duration: float) -> ToolOutcome:
    return ToolOutcome(
        call=call,
        content=f"Tool {tool.name!r} failed: {type(exc).__name__}: {exc}",
        is_error=True,
        error_kind="execution_failed",
        duration=duration,
    )


def _args_view(p: _Prepared) -> Mapping[str, Any]:
    if p.kwargs:
        return p.kwargs
    if p.args:
        first = p.args[0]
        if isinstance(first, dict):
            return first  # type: ignore[return-value]  # raw JSON-schema tools get a dict
        dump = getattr(first, "model_dump", None)
        if dump is not None:
            return dump()
    return {}
