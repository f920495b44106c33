"""``FanOutStream``: a fan-out's events as they happen, then its result.

Returned by ``fan_out_stream(agent, ...)``; runs ``_fanout.execute`` in a task of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from bastion.core import RunHandle, UserError

from ._fanout import execute
from ._fanout_plan import FanOutPlan
from ._fanout_types import FanOutEvent, FanOutResult

__all__ = ["FanOutStream"]


class FanOutStream(RunHandle[FanOutEvent, FanOutResult]):
    """The events of a fan-out as they happen; then :attr:`result`.

    A :class:`~bastion.core.RunHandle`; :attr:`run_id` is the fan-out's id.

    Example::

        async with fan_out_stream(agent, children) as fan:
            async for event in fan:
                print(event.type)
        print(fan.result.output)
    """

    __slots__ = ("_aborted", "_gen", "_plan", "_task")
    _what = "Fan-out"

    def __init__(self, plan: FanOutPlan) -> None:
        super().__init__()
        self._plan = plan
        self._gen: AsyncGenerator[FanOutEvent, None] | None = None
        self._task: asyncio.Task[FanOutResult] | None = None
        self._aborted = False

    @property
    def run_id(self) -> str:
        """The fan-out's id."""
        return self._plan.id

    @property
    def fan_out_id(self) -> str:
        """The fan-out's id (:attr:`run_id`)."""
        return self._plan.id

    @property
    def result(self) -> FanOutResult:
        """The fan-out's result, once its events have run out.

        Raises:
            UserError: The fan-out has not ended yet, or was aborted (it has no result).
        """
        if self._aborted and self._result is None:
            raise UserError(f"Fan-out {self._plan.id} was aborted: it has no result.")
        return super().result

    async def __anext__(self) -> FanOutEvent:
        gen = self._gen
        if gen is None:
            gen = self._gen = self._events()
        return await gen.__anext__()

    def abort(self) -> None:
        """Stop the fan-out: its children still running are cancelled, its events end there.

        It has no :attr:`result` then (the children that ended are in their events).
        """
        self._aborted = True
        task = self._task
        if task is not None and not task.done():
            task.cancel()

    async def _events(self) -> AsyncGenerator[FanOutEvent, None]:
        if self._aborted:  # aborted before it started: nothing runs
            return
        queue: asyncio.Queue[FanOutEvent | None] = asyncio.Queue()
        task = self._task = asyncio.create_task(execute(self._plan, queue.put_nowait))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            if not task.cancelled():
                self._result = task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop: a fan-out still running is cancelled."""
        if self._gen is not None:
            await self._gen.aclose()
