"""``AgentStream``: the handle of one run — an async iterator of its events, and its controls.

Aborting: a hard abort interrupts whatever the run awaits (a model stream, a tool, a
backoff sleep). When the consumer is inside the stream (awaiting the next event) the
consuming task is cancelled the way ``asyncio.timeout`` does it — the cancellation is caught
by the loop and undone with ``Task.uncancel()`` — so nothing outside the run sees it. When
the consumer is between events, a flag stops the run at the next event.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Callable
from contextlib import aclosing
from typing import Any, Literal

from bastion.core import (
    AgentEndEvent,
    AgentEvent,
    ConcurrentRunError,
    EventBus,
    RunTap,
    UserError,
    current_run_tap,
)

from ._agent_like import AgentRunHandle
from ._inbox import Inbox
from ._result import OutputT, RunResult
from ._scope import AbortRequest, RunScope

__all__ = ["AgentStream", "check_capacity"]

_ABORT_MESSAGE = "bastion: run aborted"


class AgentStream(AgentRunHandle[RunResult[OutputT]]):
    """The events of one run, as an async iterator; also an async context manager.

    Example::

        async with agent.stream("What changed?") as run:
            async for event in run:
                if event.type == "text.delta":
                    print(event.delta, end="")
        print(run.result.usage)
    """

    __slots__ = (
        "__weakref__",
        "_factory",
        "_gen",
        "_inside",
        "_on_done",
        "_on_start",
        "_owner",
        "_scope",
        "_tap",
    )

    def __init__(
        self,
        scope: RunScope,
        factory: Callable[[], AsyncGenerator[AgentEvent, None]],
        on_start: Callable[[AgentStream[Any]], None],
        on_done: Callable[[AgentStream[Any]], None],
    ) -> None:
        super().__init__()
        self._scope = scope
        self._factory = factory
        self._on_start = on_start
        self._on_done = on_done
        self._gen: AsyncGenerator[AgentEvent, None] | None = None
        self._owner: asyncio.Task[Any] | None = None
        self._inside = False
        self._tap: RunTap | None = None

    @property
    def run_id(self) -> str:
        """Id of the run."""
        return self._scope.run_id

    @property
    def running(self) -> bool:
        """True between the first event and the end."""
        return self._gen is not None and self._result is None

    async def __anext__(self) -> AgentEvent:
        gen = self._gen
        if gen is None:
            if self._result is not None:
                raise StopAsyncIteration
            self._on_start(self)
            self._tap = current_run_tap()
            gen = self._gen = self._factory()
        self._owner = asyncio.current_task()
        self._inside = True
        try:
            event = await gen.__anext__()
        except StopAsyncIteration:
            self._finish()
            raise
        except BaseException:
            self._finish()
            raise
        finally:
            self._inside = False
        self._observe(self._scope.ctx.event_bus, self._tap, event)
        if isinstance(event, AgentEndEvent):
            self._result = self._scope.state.result()
        return event

    def _observe(self, bus: EventBus | None, tap: RunTap | None, event: AgentEvent) -> None:
        if bus is not None:
            bus.emit(event.type, event)
        if tap is not None:
            tap(self._scope.ctx, event)

    def _bind(self, scope: RunScope) -> None:
        """Replace the scope once a resumed run's state is loaded (``Agent.resume_stream``)."""
        scope.inbox = scope.inbox or self._scope.inbox  # messages sent before it loaded
        self._scope = scope

    def steer(self, text: str) -> bool:
        """Send a message that joins the run before its next model call.

        The tool calls of the current step still run; the model reads their results and
        then ``text`` (event ``agent.steered``). Returns False (and the message is
        dropped, never kept for another run) when the run has ended or is ending.

        Raises:
            UserError: ``text`` is not a non-empty string.
        """
        return self._send(text, steer=True)

    def follow_up(self, text: str) -> bool:
        """Send a message that starts the next turn once the run has its answer.

        The current turn ends normally (its output is in the ``agent.followup.queued``
        event), then the run goes on with ``text`` as the next user message; the run's
        result is the last turn's. Returns False when the run has ended or is ending.

        Raises:
            UserError: ``text`` is not a non-empty string.
        """
        return self._send(text, steer=False)

    def _send(self, text: str, *, steer: bool) -> bool:
        if not isinstance(text, str) or not text.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            method = "steer" if steer else "follow_up"
            raise UserError(f"{method}() takes the message as a non-empty string, not {text!r}.")
        scope = self._scope
        if self._result is not None or scope.ending or scope.abort is not None:
            return False
        inbox = scope.inbox
        if inbox is None:
            inbox = scope.inbox = Inbox()
        (inbox.steering if steer else inbox.follow_ups).append(text)
        return True

    async def drain(self) -> RunResult[OutputT]:
        """Run to the end without handing events out; return the result.

        What ``agent.run()`` uses: the consuming task is inside the run for its whole
        duration, so the per-event bookkeeping of ``__anext__`` is done once.
        """
        if self._gen is not None:
            async for _ in self:
                pass
            return self.result
        self._on_start(self)
        bus = self._scope.ctx.event_bus
        tap = self._tap = current_run_tap()
        # Nobody reads the model's deltas (no bus; no tap, or one that does not need them,
        # like tracing without content capture): none of them is built.
        self._scope.quiet = bus is None and (tap is None or not getattr(tap, "needs_deltas", True))
        gen = self._gen = self._factory()
        self._owner = asyncio.current_task()
        self._inside = True
        try:
            async with aclosing(gen):
                if bus is None and tap is None:
                    async for _ in gen:
                        pass
                else:
                    async for event in gen:
                        self._observe(bus, tap, event)
            self._result = self._scope.state.result()
        finally:
            self._inside = False
            self._finish()
        return self.result

    def abort(
        self,
        *,
        drain: bool = False,
        on_pending_approvals: Literal["deny", "hold", "fail"] = "deny",
    ) -> None:
        """Stop the run; it ends with status ``aborted``.

        Args:
            drain: Let the current step (model call and its tools) finish first.
            on_pending_approvals: What happens to tool calls waiting for approval:
                ``deny`` them, ``hold`` them (the run stays ``awaiting_approval``), or
                ``fail`` the run.
        """
        if on_pending_approvals not in ("deny", "hold", "fail"):
            raise UserError(
                f"on_pending_approvals={on_pending_approvals!r}: use 'deny', 'hold' or 'fail'."
            )
        scope = self._scope
        if self._result is not None or scope.ending:
            return  # too late: the run is already closing
        current = scope.abort
        if current is not None and not current.drain:
            return
        request = AbortRequest(drain=drain, on_pending_approvals=on_pending_approvals)
        scope.abort = request
        for listener in tuple(scope.abort_listeners):
            listener(request)
        if not drain:
            scope.ctx.cancel_token.cancel("aborted")
        owner = self._owner
        if (
            not drain
            and self._inside
            and owner is not None
            and not owner.done()
            and owner is not asyncio.current_task()
            and not scope.cancel_sent
        ):
            scope.cancel_sent = True
            owner.cancel(msg=_ABORT_MESSAGE)

    async def aclose(self) -> None:
        """Stop iterating; a run not yet ended is aborted first so it ends cleanly."""
        if self._gen is not None and self._result is None:
            self.abort()
            async for _ in self:
                pass
        self._finish()

    def _finish(self) -> None:
        self._on_done(self)


def check_capacity(live: int, limit: int | None, name: str) -> None:
    if limit is not None and live >= limit:
        raise ConcurrentRunError(
            f"Agent {name!r} already has {live} run(s) in flight "
            f"(run_options.max_concurrent_runs={limit}). "
            "Wait for one to finish, or raise RunOptions.max_concurrent_runs."
        )
