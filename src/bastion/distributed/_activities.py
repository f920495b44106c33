"""The activities of one agent: a model call and a tool call, run on any worker.

Both run the agent's own parts (its models, its tools' functions) outside the workflow, and
turn failures into ``ApplicationError``s whose ``type`` names the error class: the workflow
side (``_proxies.py``) raises the same Bastion error again, so retry, fallback and the
model's view of a tool failure are what they are in a local run.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from datetime import timedelta
from typing import TYPE_CHECKING, TypeVar

from temporalio import activity
from temporalio.exceptions import ApplicationError

from bastion.core import ModelError, StreamChunk
from bastion.tools import ToolError

from ._codec import decode_request, encode_chunks
from ._source_worker import find_tool
from ._tool_remote import WorkerSide, run_tool

if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

    from bastion.core import Model
    from bastion.tools import Tool, ToolSource

__all__ = ["TOOL_ERROR", "ActivityFunction", "model_activity", "tool_activity"]

TOOL_ERROR = "bastion.ToolError"
"""The ``ApplicationError.type`` of a tool's own error result (its kind is the first detail)."""

T = TypeVar("T")
ActivityFunction = Callable[..., Awaitable[str | int]]
"""An activity function as a worker registers it: it takes and returns JSON text (or a count)."""
ModelActivity = Callable[[int, str], Awaitable[str]]
ToolActivity = Callable[[str, str, str], Awaitable[str]]


def model_activity(name: str, models: Sequence[Model], heartbeat: float | None) -> ModelActivity:
    """The activity that sends a request to ``models[index]`` and returns its chunks."""

    async def drain(model: Model, request: str) -> list[StreamChunk]:
        return [chunk async for chunk in model.stream(decode_request(request))]

    @activity.defn(name=name)
    async def call_model(index: int, request: str) -> str:
        try:
            chunks = await _beating(drain(models[index], request), heartbeat)
        except ModelError as error:
            delay = error.retry_after
            raise ApplicationError(
                error.message,
                type=type(error).__name__,
                non_retryable=not error.retryable,
                next_retry_delay=None if delay is None else timedelta(seconds=delay),
            ) from error
        return encode_chunks(chunks)

    return call_model


def tool_activity(
    name: str,
    tools: Mapping[str, Tool],
    heartbeat: float | None,
    side: WorkerSide,
    sources: Sequence[ToolSource] = (),
) -> ToolActivity:
    """The activity that runs one tool function with the model's (validated) arguments.

    ``context`` is the data of the call's ``RunContext`` (``""`` for a tool without one);
    ``side`` what its context takes from the worker (see ``_tool_remote.py``). A tool of
    one of the worker's ``sources`` is addressed ``source:<source>:<tool>``.

    A tool's exception is its result for the model, not a reason to retry: it is raised as a
    non-retryable error. Only a call that never finished (a lost worker, a timeout) is
    attempted again, and only when the tool's retry policy allows it.
    """

    @activity.defn(name=name)
    async def call_tool(tool_name: str, arguments: str, context: str = "") -> str:
        tool = await find_tool(tools, sources, tool_name)
        args, kwargs = tool.validator.validate(arguments)
        try:
            reply = await _beating(run_tool(tool, args, kwargs, context, side), heartbeat)
        except ToolError as error:
            raise ApplicationError(
                error.message, error.kind, type=TOOL_ERROR, non_retryable=True
            ) from error
        except Exception as error:
            raise ApplicationError(
                str(error), type=type(error).__name__, non_retryable=True
            ) from error
        return reply

    return call_tool


async def _beating(call: Awaitable[T], every: float | None) -> T:
    """Await ``call`` while heartbeating, so the server notices a lost worker quickly."""
    if every is None:
        return await call

    async def beat() -> None:
        while True:
            activity.heartbeat()
            await asyncio.sleep(every)

    beating = asyncio.ensure_future(beat())
    try:
        return await call
    finally:
        beating.cancel()
