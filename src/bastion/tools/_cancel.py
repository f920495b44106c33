"""Awaiting a lone async tool call in the run's own task, with a hard-kill.

Calls that run beside others go in tasks of their own and are abandoned after the grace
window (``abandon``); a lone call is awaited in place (no task per call) by
:class:`InlineCall`, which closes it if it ignores a cancellation past the grace window.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Coroutine, Generator
from typing import Generic, TypeVar

__all__ = ["InlineCall", "abandon"]

T_co = TypeVar("T_co", covariant=True)


class InlineCall(Generic[T_co]):
    """Awaits a lone async call in the caller's task, and abandons it if it ignores a cancel.

    A cancellation (an abort) is passed into the call. If the call raises, the
    cancellation goes on up; if it keeps running instead, it gets ``grace`` seconds to
    finish, then the task is cancelled once more, the call's coroutine is closed (its
    ``finally`` blocks run) and the first cancellation goes on up. Nothing runs in
    another task, so whatever the call bound to the current task stays right.
    """

    __slots__ = ("_coro", "_expired", "_grace")

    def __init__(self, coro: Coroutine[object, object, T_co], grace: float) -> None:
        self._coro = coro
        self._grace = grace
        self._expired = False

    def __await__(self) -> Generator[object, object, T_co]:
        coro = self._coro
        sent: object = None
        thrown: BaseException | None = None
        timer: asyncio.TimerHandle | None = None
        try:
            while True:
                try:
                    yielded = coro.send(sent) if thrown is None else coro.throw(thrown)
                except StopIteration as done:
                    return done.value
                if timer is None and isinstance(thrown, asyncio.CancelledError):
                    timer = _start_grace(self, self._grace)  # it went on after a cancel
                sent, thrown = None, None
                try:
                    sent = yield yielded
                except asyncio.CancelledError as exc:
                    if self._expired:
                        _close(coro)
                        task = asyncio.current_task()
                        if task is not None:
                            task.uncancel()  # the grace window's own cancel
                        raise asyncio.CancelledError(*exc.args) from None
                    thrown = exc
                except BaseException as exc:
                    thrown = exc
        finally:
            if timer is not None:
                timer.cancel()

    def expire(self, task: asyncio.Task[object]) -> None:
        """The grace window is over: interrupt the task waiting on the call."""
        self._expired = True
        task.cancel()


def _start_grace(inline: InlineCall[object], grace: float) -> asyncio.TimerHandle:
    task = asyncio.current_task()
    assert task is not None  # awaited inside a task
    return asyncio.get_running_loop().call_later(grace, inline.expire, task)


def _close(coro: Coroutine[object, object, object]) -> None:
    with contextlib.suppress(RuntimeError):  # it ignored GeneratorExit too: nothing to do
        coro.close()


_abandoned: set[asyncio.Task[object]] = set()


def abandon(task: asyncio.Task[object]) -> None:
    """Keep an abandoned task alive until it ends, and swallow whatever it ends with."""
    _abandoned.add(task)

    def forget(done: asyncio.Task[object]) -> None:
        _abandoned.discard(done)
        if not done.cancelled():
            done.exception()

    task.add_done_callback(forget)
