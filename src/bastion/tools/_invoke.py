"""Calling one tool: the progress sink, the deadline, and the three kinds of function.

Called by the executor (``_call_runner.py``) for each call that passed validation.
"""

from __future__ import annotations

import asyncio
import threading
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Protocol, TypeAlias, TypeVar

from bastion.core import (
    AgentEvent,
    Clock,
    SubagentEvent,
    SystemClock,
    ToolExecutePartialEvent,
    ToolExecuteProgressEvent,
    ToolRetryEvent,
)

from ._result import render_output
from ._tool import Progress, Tool, ToolResult

__all__ = [
    "DEFAULT_EVENT_QUEUE_DEPTH",
    "DeadlineExceeded",
    "LiveEvent",
    "ProgressQueue",
    "ProgressSink",
    "StreamRedactor",
    "invoke",
    "within",
]

T = TypeVar("T")

DEFAULT_EVENT_QUEUE_DEPTH = 256
"""Default bound on the live progress/partial events a batch holds for a slow consumer."""

LiveEvent: TypeAlias = (
    ToolExecuteProgressEvent | ToolExecutePartialEvent | SubagentEvent | ToolRetryEvent
)


class ProgressQueue:
    """The live events of one batch, bounded (the oldest dropped first), and its completion markers.

    Holds at most ``depth`` live events (``tool.execute.progress`` / ``partial``,
    ``subagent.event``). When a tool reports faster than the consumer reads, the OLDEST
    queued live event is dropped to make room (``on_drop`` is told); the newest state is
    what a UI wants. Completion markers (the ``int`` index of a finished call) are never
    dropped and do not count toward the depth, so end events always follow. Dropping
    loses nothing of the result: :class:`ProgressSink` keeps every streamed piece for the
    assembled output.

    Used on the event loop only (worker threads go through ``call_soon_threadsafe``).
    """

    __slots__ = ("_depth", "_items", "_live", "_on_drop", "_waiter")

    def __init__(
        self,
        depth: int = DEFAULT_EVENT_QUEUE_DEPTH,
        on_drop: Callable[[LiveEvent], None] | None = None,
    ) -> None:
        self._depth = depth
        self._on_drop = on_drop
        self._items: deque[LiveEvent | int] = deque()
        self._live = 0
        self._waiter: asyncio.Future[None] | None = None

    def put_nowait(self, item: LiveEvent | int) -> None:
        """Queue a live event (dropping the oldest one when full) or a completion marker."""
        items = self._items
        if not isinstance(item, int):
            if self._live >= self._depth:
                self._drop_oldest()
            self._live += 1
        items.append(item)
        waiter = self._waiter
        if waiter is not None and not waiter.done():
            waiter.set_result(None)

    async def get(self) -> LiveEvent | int:
        """The next item, waiting for one."""
        items = self._items
        while not items:
            self._waiter = asyncio.get_running_loop().create_future()
            try:
                await self._waiter
            finally:
                self._waiter = None
        item = items.popleft()
        if not isinstance(item, int):
            self._live -= 1
        return item

    def qsize(self) -> int:
        """Items queued (live events and markers)."""
        return len(self._items)

    def _drop_oldest(self) -> None:
        items = self._items
        for i, queued in enumerate(items):
            if not isinstance(queued, int):  # markers are few: this stops near the front
                del items[i]
                self._live -= 1
                if self._on_drop is not None:
                    self._on_drop(queued)
                return


class DeadlineExceeded(Exception):
    """The executor's own deadline for a call expired (not a ``TimeoutError`` of the tool)."""


class StreamRedactor(Protocol):
    """Redacts secrets from streamed text (the vault is one)."""

    def redact(self, text: str) -> str:
        """``text`` with every secret value replaced."""
        ...

    def unfinished_tail(self, text: str) -> int:
        """How many characters at the end of ``text`` may be the start of a secret value."""
        ...


class ProgressSink:
    """Turns a tool's progress reports into events on the batch's queue.

    ``scrub`` rewrites each event before it is queued: a call that may reveal secrets
    gets one that redacts the revealed values. With a ``redactor``, streamed pieces are
    redacted as one text: the end of a piece that may begin a secret value is held back
    until the next piece (or the end of the call, :meth:`flush`) shows whether the value
    completes, so a value split across two pieces never reaches the events, whole or in
    halves. The pieces kept for the assembled output stay as streamed (the finished result
    is redacted as a whole).

    Events are queued unnumbered; the run loop numbers them as it yields them, so ``seq``
    always follows emission order. Reports from a sync tool's worker thread are handed to
    the event loop with ``call_soon_threadsafe`` (``asyncio.Queue`` is not thread-safe).
    """

    __slots__ = (
        "_call_id",
        "_held",
        "_loop",
        "_parts",
        "_queue",
        "_redactor",
        "_run_id",
        "_scrub",
        "_thread",
    )

    def __init__(
        self,
        queue: ProgressQueue | None,
        run_id: str,
        call_id: str,
        scrub: Callable[[LiveEvent], LiveEvent] | None = None,
        redactor: StreamRedactor | None = None,
    ) -> None:
        self._queue = queue
        self._scrub = scrub  # applied to each event before it is queued (secret redaction)
        self._redactor = redactor
        self._held = ""  # the end of the streamed text that may begin a secret value
        self._run_id = run_id
        self._call_id = call_id
        self._parts: list[str] = []
        self._loop = asyncio.get_running_loop()
        self._thread = threading.get_ident()

    def progress(self, current: float, total: float | None, message: str | None) -> None:
        """Queue a ``tool.execute.progress`` event."""
        self._put(
            ToolExecuteProgressEvent(
                run_id=self._run_id,
                tool_call_id=self._call_id,
                current=current,
                total=total,
                message=message,
            )
        )

    def partial(self, content: str) -> None:
        """Keep a piece of output and queue a ``tool.execute.partial`` event."""
        self._parts.append(content)
        redactor = self._redactor
        if redactor is not None:
            text = redactor.redact(self._held + content)
            held = redactor.unfinished_tail(text)
            content, self._held = text[: len(text) - held], text[len(text) - held :]
            if not content:
                return
        self._put(
            ToolExecutePartialEvent(
                run_id=self._run_id, tool_call_id=self._call_id, content=content
            )
        )

    def flush(self) -> None:
        """Queue the streamed text held back as a possible secret start (the call ended)."""
        held, self._held = self._held, ""
        if held:
            self._put(
                ToolExecutePartialEvent(
                    run_id=self._run_id, tool_call_id=self._call_id, content=held
                )
            )

    def subagent(self, agent_name: str, event: AgentEvent, ancestry: tuple[str, ...] = ()) -> None:
        """Queue a ``subagent.event`` wrapping an event of a run the tool started."""
        self._put(
            SubagentEvent(
                run_id=self._run_id,
                tool_call_id=self._call_id,
                agent_name=agent_name,
                child_run_id=event.run_id,
                ancestry=ancestry or (agent_name,),
                event=event,
            )
        )

    @property
    def redacts(self) -> bool:
        """True when streamed pieces pass a redactor (and may be held back)."""
        return self._redactor is not None

    @property
    def has_parts(self) -> bool:
        """True when the tool streamed any output."""
        return bool(self._parts)

    def joined(self) -> str:
        """The streamed pieces, joined."""
        return "".join(self._parts)

    def _put(self, event: LiveEvent) -> None:
        queue = self._queue
        if queue is None:
            return
        if self._scrub is not None:
            event = self._scrub(event)
        if threading.get_ident() == self._thread:
            queue.put_nowait(event)
        else:
            self._loop.call_soon_threadsafe(queue.put_nowait, event)


def invoke(
    tool: Tool,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    sink: ProgressSink | None,
    clock: Clock,
) -> Awaitable[object]:
    """Call the tool's function, within its ``timeout`` when it has one.

    Returns the awaitable of the call itself (no wrapping coroutine frame on the hot path).
    Awaiting it raises :class:`DeadlineExceeded` when the timeout expired.
    """
    call = _call if sink is None or not sink.redacts else _call_redacted
    if tool.timeout is None:
        return call(tool, args, kwargs, sink)
    return within(clock, tool.timeout, call(tool, args, kwargs, sink))


async def within(clock: Clock, seconds: float, call: Awaitable[T]) -> T:
    """Await ``call``, or raise :class:`DeadlineExceeded` once ``seconds`` passed on ``clock``."""
    if type(clock) is SystemClock:
        # The real clock: asyncio's own timeout is the same race without extra tasks.
        try:
            async with asyncio.timeout(seconds) as deadline:
                return await call
        except TimeoutError:
            if deadline.expired():
                raise DeadlineExceeded from None
            raise
    # Any other clock (a VirtualClock in tests): race the call against the clock's sleep.
    task: asyncio.Task[T] = asyncio.ensure_future(call)
    timer = asyncio.ensure_future(clock.sleep(seconds))
    try:
        await asyncio.wait({task, timer}, return_when=asyncio.FIRST_COMPLETED)
    finally:
        for pending in (task, timer):
            if not pending.done():
                pending.cancel()
        await asyncio.gather(task, timer, return_exceptions=True)
    if task.cancelled():
        raise DeadlineExceeded
    return task.result()


async def _call_redacted(
    tool: Tool, args: tuple[object, ...], kwargs: dict[str, object], sink: ProgressSink | None
) -> object:
    """:func:`_call`, then send the streamed text held back as a possible secret start."""
    assert sink is not None  # only sinks with a redactor come here
    try:
        return await _call(tool, args, kwargs, sink)
    finally:
        sink.flush()


async def _call(
    tool: Tool, args: tuple[object, ...], kwargs: dict[str, object], sink: ProgressSink | None
) -> object:
    fn = tool.function
    if tool.kind == "async":
        value = await fn(*args, **kwargs)
    elif tool.kind == "sync":
        value = (
            await asyncio.to_thread(fn, *args, **kwargs)
            if tool.run_in_thread
            else fn(*args, **kwargs)
        )
    else:
        assert sink is not None  # async generator tools always get a sink
        value = None
        async for item in fn(*args, **kwargs):
            if isinstance(item, str):
                sink.partial(item)
            elif isinstance(item, Progress):
                sink.progress(item.current, item.total, item.message)
            elif isinstance(item, ToolResult):
                value = item
            else:
                sink.partial(render_output(item))
    if value is None and sink is not None and sink.has_parts:
        return sink.joined()
    return value
