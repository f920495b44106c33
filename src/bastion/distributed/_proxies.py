"""The workflow side: a clock, a model and tools that are Temporal calls, not I/O.

Inside the workflow the Bastion loop runs unchanged; only what it is given differs. Time is
the workflow's (``workflow.now()``, timers), every model call is the model activity and
every tool function is the tool activity. A failed activity is raised again as the Bastion
error it came from, so the loop decides on it as it would locally.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass
from datetime import timedelta
from functools import cache
from typing import TYPE_CHECKING, cast

from temporalio import workflow
from temporalio.common import RetryPolicy
from temporalio.exceptions import ActivityError, ApplicationError, TimeoutError

from bastion.core import FinishChunk, Model, ModelError, ModelTimeout, StreamChunk, Usage
from bastion.tools import InputRequest, InputRequired, ToolError

from ._activities import TOOL_ERROR
from ._codec import decode_chunks, encode_request, encode_value
from ._tool_remote import remote_function
from ._tool_wire import decode_reply, encode_context

if TYPE_CHECKING:
    from bastion.core import ModelRequest, RunContext, ToolErrorKind
    from bastion.tools import Tool

    from ._tool_wire import WireReply

__all__ = ["ActivityModel", "Activities", "WorkflowClock", "proxy_tool", "remote_error"]


class WorkflowClock:
    """The workflow's deterministic time: ``workflow.now()``, ``workflow.time()``, timers."""

    def now(self) -> float:
        """The workflow's current time, in seconds since the epoch."""
        return workflow.now().timestamp()

    def monotonic(self) -> float:
        """The workflow's loop time."""
        return workflow.time()

    async def sleep(self, seconds: float) -> None:
        """A durable timer."""
        await workflow.sleep(seconds)


@dataclass(frozen=True, slots=True, kw_only=True)
class Activities:
    """How the workflow calls its activities: names, timeouts and retry policies."""

    model: str
    tool: str
    timeout: timedelta
    heartbeat: timedelta | None
    retry: RetryPolicy
    no_retry: RetryPolicy
    counters: str = ""  # the governance counters' local activity ("": no governance)
    publish: str | None = None
    """The activity that logs the run's events (``None``: they are not published)."""
    source: str = ""
    """The activity that lists one of the worker's tool sources."""


class ActivityModel(Model):
    """A model whose every call is the model activity on ``models[index]``."""

    def __init__(
        self, inner: Model, index: int, activities: Activities, usage: list[Usage]
    ) -> None:
        self.provider = inner.provider
        self.name = inner.name
        self.accepts_sensitivity = inner.accepts_sensitivity
        self.context_window = inner.context_window
        self.tokenizer = inner.tokenizer
        self.output_mode = inner.output_mode
        self._index = index
        self._activities = activities
        self._usage = usage  # one cell, shared with the workflow's status query

    async def stream(self, request: ModelRequest) -> AsyncGenerator[StreamChunk, None]:
        """Run the model activity and stream back the chunks it returned."""
        a = self._activities
        try:
            text = await workflow.execute_activity(
                a.model,
                args=[self._index, encode_request(request)],
                result_type=str,
                start_to_close_timeout=a.timeout,
                heartbeat_timeout=a.heartbeat,
                retry_policy=a.retry,
                summary=self.key,
            )
        except ActivityError as error:
            raise _model_error(error) from error
        for chunk in decode_chunks(text):
            if isinstance(chunk, FinishChunk):
                self._usage[0] = self._usage[0] + chunk.usage
            yield chunk


def proxy_tool(tool: Tool, activities: Activities) -> Tool:
    """``tool`` with a function that runs it as the tool activity.

    A ``side_effecting`` or ``external_stateful`` tool without an idempotency key runs at
    most once: when the worker running it is lost, the call asks a person what happened
    (the run parks, as the local journal's ledger holds such a call), never runs again
    on its own.
    """
    once = tool.side_effect_class in {"side_effecting", "external_stateful"}
    once = once and tool.idempotency_key is None
    policy = activities.no_retry if once else activities.retry
    timeout = activities.timeout if tool.timeout is None else timedelta(seconds=tool.timeout)
    name = tool.name

    async def run_as_activity(
        ctx: RunContext[object] | None, args: tuple[object, ...], kwargs: dict[str, object]
    ) -> WireReply:
        arguments = encode_value(kwargs if kwargs or not args else args[0])
        try:
            text = await workflow.execute_activity(
                activities.tool,
                args=[name, arguments, encode_context(ctx)],
                result_type=str,
                start_to_close_timeout=timeout,
                heartbeat_timeout=activities.heartbeat,
                retry_policy=policy,
                summary=name,
            )
        except ActivityError as error:
            if once and not isinstance(error.cause, ApplicationError):
                raise InputRequired(_unknown(name, tool.side_effect_class, error)) from error
            raise _tool_error(name, error) from error
        return decode_reply(text)

    return _replace_function(tool, remote_function(tool, run_as_activity))


OUTCOME_UNKNOWN = (
    "Outcome unknown: the call to {name!r} started on a worker that was lost ({why}), and "
    "the tool is {kind!r} without an idempotency key, so running it again could repeat "
    "its effect. Decide with ApprovalDecision(result='...') if it happened, granted=True "
    "to run it again, or granted=False to fail the call."
)


def _unknown(name: str, kind: str, error: ActivityError) -> InputRequest:
    """The question a lost once-only call puts to a person (the local ledger's)."""
    why = str(error.cause or error)
    return InputRequest(
        message=OUTCOME_UNKNOWN.format(name=name, why=why, kind=kind), source="temporal"
    )


def _replace_function(tool: Tool, function: Callable[..., object]) -> Tool:
    from dataclasses import replace

    kind = "async_gen" if tool.kind == "async_gen" else "async"
    return replace(tool, function=function, kind=kind, timeout=None, run_in_thread=False)


def _model_error(error: ActivityError) -> ModelError:
    cause = error.cause
    if isinstance(cause, ApplicationError):
        kind = _model_errors().get(cause.type or "", ModelError)
        return kind(cause.message, retryable=False)  # the activity's retries are spent
    if isinstance(cause, TimeoutError):
        return ModelTimeout(f"The model activity timed out: {cause.message}", retryable=False)
    return ModelError(str(cause or error), retryable=False)


def _tool_error(name: str, error: ActivityError) -> Exception:
    cause = error.cause
    if isinstance(cause, ApplicationError):
        if cause.type == TOOL_ERROR:
            kind = cause.details[0] if cause.details else "execution_failed"
            return ToolError(cause.message, kind=cast("ToolErrorKind", kind))
        return _remote_error(cause.type or "Exception")(cause.message)
    return ToolError(f"Tool {name!r} did not finish: {cause or error}.", kind="timeout")


@cache
def _model_errors() -> dict[str, type[ModelError]]:
    found: dict[str, type[ModelError]] = {}
    pending: list[type[ModelError]] = [ModelError]
    while pending:
        kind = pending.pop()
        found[kind.__name__] = kind
        pending.extend(kind.__subclasses__())
    return found


@cache
def _remote_error(name: str) -> type[Exception]:
    """An exception class named as the tool's was, so the model reads the same failure."""
    return type(name, (Exception,), {"__module__": "bastion.distributed.remote"})


remote_error = _remote_error
"""The exception class named as a worker's error was (tool sources raise it too)."""
