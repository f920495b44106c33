"""One invocation of a graph: what its root execution and every nested one share.

A :class:`Run` holds the governor, the invocation id, where signals go (nowhere for
``Graph.run``: no signal object is built then), the checkpointer, the abort state and the
fire-and-forget spawns. :class:`GraphStream` is what ``Graph.stream`` returns: an async
iterator of signals, with :meth:`GraphStream.abort`.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable, Coroutine
from typing import TYPE_CHECKING, Any, Self

from bastion.core import Clock, RunHandle, UserError

from ._signals import GraphSignal

if TYPE_CHECKING:
    from bastion.governance import Governor

    from ._checkpoint import Checkpointer
    from ._result import GraphResult

__all__ = ["GraphStream", "Run"]

Sink = Callable[[GraphSignal], None]


class Run:
    """The state one invocation's executions share."""

    __slots__ = (
        "aborted",
        "background",
        "checkpointer",
        "clock",
        "governor",
        "invocation_id",
        "main",
        "sink",
        "started",
    )

    def __init__(
        self,
        *,
        governor: Governor,
        invocation_id: str,
        sink: Sink | None,
        checkpointer: Checkpointer | None,
        clock: Clock,
    ) -> None:
        self.governor = governor
        self.invocation_id = invocation_id
        self.sink = sink
        self.checkpointer = checkpointer
        self.clock = clock
        self.aborted: str | None = None
        self.main: asyncio.Task[Any] | None = None
        self.started = False  # the root execution is under way: cancelling it is safe
        self.background: set[asyncio.Task[Any]] = set()

    def abort(self, reason: str = "aborted") -> None:
        """Stop everything still running; pending work raises ``Aborted``."""
        if self.aborted is not None:
            return
        self.aborted = reason
        for task in list(self.background):
            task.cancel()
        if self.started and self.main is not None and not self.main.done():
            self.main.cancel()

    def spawn_background(self, work: Coroutine[Any, Any, Any]) -> None:
        """Start fire-and-forget work; the root execution waits for it before it ends."""
        task = asyncio.get_running_loop().create_task(work)
        self.background.add(task)
        task.add_done_callback(self.background.discard)

    async def join_background(self) -> None:
        """Wait for the fire-and-forget work (including what it starts meanwhile)."""
        while self.background:
            await asyncio.gather(*self.background, return_exceptions=True)


class GraphStream(RunHandle[GraphSignal, "GraphResult"]):
    """The signals of one graph execution, as they happen; ``abort()`` stops it.

    A :class:`~bastion.core.RunHandle`: iterate it once (or ``drain()`` it); the last signal
    is the root's ``graph.after``, and :attr:`result` is then set. :attr:`run_id` is the
    execution's id (its checkpoints' key).
    """

    __slots__ = ("_gen", "_iterated", "_pending_abort", "_run", "_run_id", "_start")
    _what = "Graph execution"

    def __init__(
        self,
        run_id: str,
        start: Callable[[Sink], tuple[Run, Coroutine[Any, Any, GraphResult]]],
    ) -> None:
        super().__init__()
        self._run_id = run_id
        self._start = start
        self._run: Run | None = None
        self._pending_abort: str | None = None
        self._iterated = False
        self._gen: AsyncGenerator[GraphSignal, None] | None = None

    @property
    def run_id(self) -> str:
        """The execution's id."""
        return self._run_id

    def abort(self, reason: str = "aborted") -> None:
        """Abort the execution: running nodes stop, ``graph.after`` still comes."""
        if self._run is None:
            self._pending_abort = reason
        else:
            self._run.abort(reason)

    def __aiter__(self) -> Self:
        if self._iterated:
            raise UserError("A GraphStream runs once: call graph.stream(...) again for a new run.")
        self._iterated = True
        return self

    async def __anext__(self) -> GraphSignal:
        gen = self._gen
        if gen is None:
            gen = self._gen = self._iterate()
        return await gen.__anext__()

    async def aclose(self) -> None:
        """Stop: an execution still running is aborted (``graph.after`` is not awaited)."""
        if self._gen is not None:
            await self._gen.aclose()

    async def _iterate(self) -> AsyncGenerator[GraphSignal, None]:
        queue: asyncio.Queue[GraphSignal | None] = asyncio.Queue()
        run, work = self._start(queue.put_nowait)
        self._run = run

        async def main() -> GraphResult:
            try:
                return await work
            finally:
                queue.put_nowait(None)

        task = asyncio.get_running_loop().create_task(main())
        run.main = task
        if self._pending_abort is not None:
            run.abort(self._pending_abort)
        try:
            while (signal := await queue.get()) is not None:
                yield signal
            self._result = await task
        finally:
            if not task.done():
                run.abort("the stream was closed")
                await asyncio.gather(task, return_exceptions=True)
