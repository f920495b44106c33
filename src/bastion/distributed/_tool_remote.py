"""Both ends of a tool call that takes a ``RunContext``, streams, or returns a ``ToolResult``.

On the worker (:func:`run_tool`) the activity rebuilds the call's ``RunContext`` from the data
the workflow sent, with what only the worker has: the agent's ``deps`` (``Lazy`` ones made for
the call), its runtime and sandbox, the real clock. What the tool reports while it runs
(``ctx.stream_content``, ``ctx.report_progress``, an async generator's items) is recorded in
order and heartbeated as it comes. In the workflow (:func:`remote_function`) the reply is
replayed to the executor as if the tool had run there: the same pieces and progress, the
same value or ``ToolResult``, the session state the tool left.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Awaitable, Callable
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, TypeAlias, cast

from temporalio import activity

from bastion.agent.steps._prepare import resolve_deps
from bastion.core import RunContext, SystemClock, UserError
from bastion.tools import InputRequired, Progress, ToolResult
from bastion.tools._invoke import ProgressSink, invoke

from ._tool_wire import Report, WireReply, decode_context, encode_reply, reply_of

if TYPE_CHECKING:
    from bastion.core import AgentEvent, Runtime, SandboxConfig
    from bastion.tools import Tool

    from ._tool_wire import WireContext

__all__ = ["RemoteCall", "WorkerSide", "remote_function", "run_tool"]

RemoteCall: TypeAlias = Callable[
    [RunContext[object] | None, tuple[object, ...], dict[str, object]], Awaitable[WireReply]
]
"""Runs one call as the tool activity: (the call's context, its arguments) -> its reply."""


@dataclass(frozen=True, slots=True, kw_only=True)
class WorkerSide:
    """What a tool's ``RunContext`` gets from the worker, never from the workflow."""

    deps: object = None
    runtime: Runtime | None = None
    sandbox: bool | SandboxConfig | None = None


class _Recorder(ProgressSink):
    """A progress sink that keeps every report in order and heartbeats each one.

    It keeps no pieces for joining: the workflow's executor joins the replayed pieces.
    """

    def __init__(self) -> None:
        super().__init__(None, "", "")
        self.reports: list[Report] = []
        self._on_loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()

    def progress(self, current: float, total: float | None, message: str | None) -> None:
        self._keep(Report(kind="progress", current=current, total=total, message=message))

    def partial(self, content: str) -> None:
        self._keep(Report(kind="partial", text=content))

    def subagent(self, agent_name: str, event: AgentEvent, ancestry: tuple[str, ...] = ()) -> None:
        """A sub-run's events stay on the worker (they are not part of the call's result)."""

    @property
    def has_parts(self) -> bool:
        return False

    def _keep(self, report: Report) -> None:
        if threading.get_ident() == self._loop_thread:
            self._beat(report)
        else:  # a sync tool in a worker thread: heartbeat from the activity's loop
            self._on_loop.call_soon_threadsafe(self._beat, report)

    def _beat(self, report: Report) -> None:
        self.reports.append(report)
        activity.heartbeat(report)


async def run_tool(
    tool: Tool,
    args: tuple[object, ...],
    kwargs: dict[str, object],
    context: str,
    side: WorkerSide,
) -> str:
    """Run ``tool`` on the worker and return its reply as JSON text."""
    recorder = _Recorder()
    wire = decode_context(context)
    ctx: RunContext[object] | None = None
    if tool.takes_ctx:
        if wire is None:
            raise UserError(f"Tool {tool.name!r} takes a RunContext, and the call carried none.")
        ctx = await _context(wire, side, tool, recorder)
        args = (ctx, *args)
    # the tool's own timeout is the activity's (start_to_close), not a second deadline here
    try:
        value = await invoke(replace(tool, timeout=None), args, kwargs, recorder, SystemClock())
    except InputRequired as asking:  # the workflow raises it again: the run parks
        value = asking.request
    except asyncio.CancelledError:  # the activity was cancelled (the run was aborted)
        if ctx is not None:  # a sync tool in a thread sees ctx.cancelled
            ctx.cancel_token.cancel("The Temporal activity was cancelled.")
        raise
    state = None
    if ctx is not None and wire is not None and ctx.session_state != wire.session_state:
        state = ctx.session_state
    return encode_reply(reply_of(value, recorder.reports, state))


async def _context(
    wire: WireContext, side: WorkerSide, tool: Tool, recorder: _Recorder
) -> RunContext[object]:
    ctx: RunContext[object] = RunContext(
        run_id=wire.run_id,
        agent_name=wire.agent_name,
        deps=side.deps,
        session_id=wire.session_id,
        user_id=wire.user_id,
        tenant_id=wire.tenant_id,
        metadata=wire.metadata,
        session_state=dict(wire.session_state),
        usage=wire.usage,
        step=wire.step,
        runtime=side.runtime,
        sandbox=side.sandbox,
    )
    await resolve_deps(ctx)
    return ctx.for_tool_call(
        wire.tool_call_id or "",
        wire.tool_name or tool.name,
        recorder,
        wire.idempotency_key,
        sandbox=tool.sandbox,
        input_answer=wire.input_answer,
    )


def remote_function(tool: Tool, call: RemoteCall) -> Callable[..., object]:
    """The workflow-side function of ``tool``: ``call`` runs it, its reply is replayed."""
    if tool.kind == "async_gen":

        async def streamed(
            *args: object, **kwargs: object
        ) -> AsyncIterator[str | Progress | ToolResult]:
            ctx, rest = _split(tool, args)
            reply = await call(ctx, rest, kwargs)
            _keep_state(ctx, reply)
            for report in reply.reports:
                yield report.item()
            _ask(reply)
            returned = reply.returned()
            if isinstance(returned, ToolResult):
                yield returned

        return streamed

    async def returned(*args: object, **kwargs: object) -> object:
        ctx, rest = _split(tool, args)
        reply = await call(ctx, rest, kwargs)
        _keep_state(ctx, reply)
        if ctx is not None:
            for report in reply.reports:
                if report.kind == "partial":
                    ctx.stream_content(report.text)
                else:
                    ctx.report_progress(report.current, report.total, report.message)
        _ask(reply)
        return reply.returned()

    return returned


def _split(
    tool: Tool, args: tuple[object, ...]
) -> tuple[RunContext[object] | None, tuple[object, ...]]:
    """The call's ``RunContext`` (a tool that takes one has it first) and its other arguments."""
    if not tool.takes_ctx:
        return None, args
    first = args[0]
    if not isinstance(first, RunContext):
        raise TypeError(f"Tool {tool.name!r} takes a RunContext first, not {type(first).__name__}.")
    return cast("RunContext[object]", first), args[1:]  # its deps are the worker's


def _keep_state(ctx: RunContext[object] | None, reply: WireReply) -> None:
    """The session state the tool left becomes the run's (the local tool mutates it)."""
    if ctx is not None and reply.state is not None:
        ctx.session_state.clear()
        ctx.session_state.update(reply.state)


def _ask(reply: WireReply) -> None:
    """Raise again the question the call asked on the worker: the run parks for an answer."""
    if reply.asked is not None:
        raise InputRequired(reply.asked)
