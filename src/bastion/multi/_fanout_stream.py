"""``FanOutStream``: a fan-out's events as they happen, then its result.

Returned by ``fan_out_stream(agent, ...)``; runs ``_fanout.execute`` in a task of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator

from bastion.core import UserError

from ._fanout import execute
from ._fanout_plan import FanOutPlan
from ._fanout_types import FanOutEvent, FanOutResult

__all__ = ["FanOutStream"]


class FanOutStream:
    """The events of a fan-out as they happen; then :attr:`result`.

    Example::

        async with fan_out_stream(agent, children) as fan:
            async for event in fan:
                print(event.type)
        print(fan.result.output)
    """

    __slots__ = ("_gen", "_plan", "_result")

    def __init__(self, plan: FanOutPlan) -> None:
        self._plan = plan
        self._result: FanOutResult | None = None
        self._gen: AsyncGenerator[FanOutEvent, None] | None = None

    @property
    def fan_out_id(self) -> str:
        """The fan-out's id."""
        return self._plan.id

    @property
    def result(self) -> FanOutResult:
        """The fan-out's result, once its events are consumed.

        Raises:
            UserError: The fan-out has not ended yet.
        """
        if self._result is None:
            raise UserError(
                f"Fan-out {self._plan.id} has not ended yet: iterate the stream to its end first."
            )
        return self._result

    def __aiter__(self) -> FanOutStream:
        return self

    async def __anext__(self) -> FanOutEvent:
        if self._gen is None:
            self._gen = self._events()
        return await self._gen.__anext__()

    async def _events(self) -> AsyncGenerator[FanOutEvent, None]:
        queue: asyncio.Queue[FanOutEvent | None] = asyncio.Queue()
        task = asyncio.create_task(execute(self._plan, queue.put_nowait))
        task.add_done_callback(lambda _: queue.put_nowait(None))
        try:
            while (event := await queue.get()) is not None:
                yield event
            self._result = task.result()
        finally:
            if not task.done():
                task.cancel()
                await asyncio.gather(task, return_exceptions=True)

    async def aclose(self) -> None:
        """Stop: a fan-out still running is cancelled."""
        if self._gen is not None:
            await self._gen.aclose()

    async def __aenter__(self) -> FanOutStream:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()
