"""Where and when the admitted calls of one step run, and how an abort stops them.

A lone call that cannot stream is awaited in the caller's task (:func:`run_alone`);
otherwise the calls run with bounded parallelism, a ``sequential`` tool waiting for
everything before it and blocking everything after it (:func:`run_groups`). An abort
cancels them and abandons those that ignore it after the grace window (:func:`stop`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Coroutine, Sequence
from typing import Any

from ._call_runner import CallRunner
from ._cancel import InlineCall, abandon
from ._invoke import ProgressQueue
from ._outcome import ToolOutcome
from ._prepared import PreparedCall

__all__ = ["cannot_stream", "run_alone", "run_groups", "stop"]


def cannot_stream(p: PreparedCall) -> bool:
    """Whether the call's tool can emit no live event (it neither streams nor takes ctx)."""
    tool = p.tool
    return tool is not None and tool.kind != "async_gen" and not tool.takes_ctx


async def run_alone(p: PreparedCall, runner: CallRunner, grace: float) -> ToolOutcome:
    """Run a lone call that cannot stream, without the live-event machinery.

    Args:
        p: The call.
        runner: Runs it.
        grace: Seconds a tool that ignores a cancellation gets before it is closed.
    """
    tool = p.tool
    if tool is None or tool.kind == "sync":
        # Awaited in the caller's task: a worker thread's future cancels at once.
        return await runner.execute(p, None)
    # Driven in the caller's task (no task per call); a tool that ignores a
    # cancellation is given the grace window, then closed (see ``InlineCall``).
    return await InlineCall(runner.execute(p, None), grace)


async def run_groups(
    runnable: Sequence[PreparedCall],
    runner: CallRunner,
    queue: ProgressQueue,
    outcomes: list[ToolOutcome | None],
    max_parallel: int,
) -> None:
    """Run the calls, at most ``max_parallel`` at once, ``sequential`` tools alone.

    Each outcome goes to ``outcomes`` at the call's index, then the index to ``queue``
    (the call's completion marker, after every live event it queued).
    """
    limit = asyncio.Semaphore(max_parallel)

    async def run(p: PreparedCall) -> None:
        async with limit:
            outcomes[p.index] = await runner.execute(p, queue)
        queue.put_nowait(p.index)

    group: list[PreparedCall] = []
    for p in runnable:
        if p.tool is not None and p.tool.execution_mode == "sequential":
            await _run_group(group, run)
            group = []
            await run(p)
        else:
            group.append(p)
    await _run_group(group, run)


async def stop(task: asyncio.Task[None], grace: float) -> None:
    """Cancel the task running the calls unless it is done; abandon it after ``grace``."""
    if not task.done():
        task.cancel()
        # Tools that ignore cancellation are abandoned after the grace window (in
        # real time: it bounds a hung tool); their calls end as ``aborted``.
        await asyncio.wait({task}, timeout=grace)
        if not task.done():
            abandon(task)


async def _run_group(
    group: list[PreparedCall], run: Callable[[PreparedCall], Coroutine[Any, Any, None]]
) -> None:
    if len(group) == 1:
        await run(group[0])
    elif group:
        async with asyncio.TaskGroup() as tg:
            for p in group:
                tg.create_task(run(p))
