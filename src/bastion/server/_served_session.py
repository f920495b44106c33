"""One session served by this process: its ``Session`` handle and the record of its events.

Each listener event of the session becomes one numbered event of the session's stream
(its ``seq`` continues the numbers already in the store), written to the store under the
key ``session:<id>`` before any follower receives it, like a run's events.
"""

from __future__ import annotations

import asyncio
import json
import logging
from collections.abc import AsyncIterator, Mapping
from datetime import datetime

from bastion.core import message_adapter
from bastion.sessions import (
    ApprovalRequested,
    InterruptRequested,
    MessageAdded,
    Session,
    SessionError,
    StepDone,
    ToolResult,
    TurnAborted,
    TurnEnd,
)
from bastion.tools import ToolCallRequest

from ._events import EventLog, Hub, LoggedEvent
from ._items import call_item, interrupt_item, usage_view
from ._models import PendingItem
from ._recorder import Recorder
from ._session_models import SessionView

__all__ = ["ServedSession", "follow_session", "session_key"]

_log = logging.getLogger("bastion.server")


def session_key(session_id: str) -> str:
    """The key of a session's events in the event log."""
    return f"session:{session_id}"


class ServedSession:
    """A session open in this process, its owner, and its event stream's recorder."""

    def __init__(
        self,
        session: Session,
        *,
        agent: str,
        tenant: str | None,
        created_at: datetime,
        recorder: Recorder,
        last_seq: int,
        last_type: str | None,
        runs: list[str],
    ) -> None:
        self.session = session
        self.agent = agent
        self.tenant = tenant
        self.created_at = created_at
        self.runs = runs
        self._recorder = recorder
        self._seq = last_seq
        self._last_type = last_type
        self._watchers: set[asyncio.Task[None]] = set()
        self._listen()

    def ran(self, run_id: str) -> None:
        """A turn started (or resumed) run ``run_id``."""
        resumed = run_id in self.runs
        if not resumed:
            self.runs.append(run_id)
        self.emit("run", {"run_id": run_id, "resumed": resumed})

    def emit(self, type: str, payload: Mapping[str, object]) -> None:
        """Number ``payload`` as the session's next event and record it."""
        self._seq += 1
        self._last_type = type
        data = {"seq": self._seq, "session_id": self.session.id, "type": type, **payload}
        self._recorder.add(LoggedEvent(seq=self._seq, type=type, data=_dumps(data)))

    def settled(self, last: int) -> bool:
        """Whether a follower that saw up to seq ``last`` has seen the session settle.

        That is: the session's loop is not running, and its last event is ``idle`` (or it
        has none) and was seen.
        """
        quiet = self._last_type in (None, "idle")
        return quiet and last >= self._seq and not self.session.running

    async def close(self) -> None:
        """Let the idle watchers tell, then write every recorded event (server shutdown)."""
        await asyncio.gather(*self._watchers)
        self._recorder.close()
        await self._recorder.flushed()

    def watch(self) -> None:
        """Emit ``idle`` when the session's loop settles; log its failure, if it fails."""
        task = asyncio.get_running_loop().create_task(self._idle())
        self._watchers.add(task)
        task.add_done_callback(self._watchers.discard)

    async def _idle(self) -> None:
        try:
            await self.session.wait_for_idle()
        except Exception:
            _log.exception("session %s: a turn failed", self.session.id)
        if self.session.running or self._last_type == "idle":
            return  # another send keeps it going, or another watcher told already
        self.emit("idle", {"status": self.view().status})

    def view(self) -> SessionView:
        """The session as the API shows it."""
        session = self.session
        pending = self.pending()
        status = "running" if session.running else "waiting" if pending else "idle"
        return SessionView(
            session_id=session.id, agent=self.agent, tenant_id=self.tenant, status=status,
            send_mode=session.send_mode, created_at=self.created_at,
            messages=len(session.messages), runs=list(self.runs), pending=pending,
        )  # fmt: skip

    def pending(self) -> list[PendingItem]:
        """The calls and interrupts the session's waiting turn needs decisions on."""
        run_id = self.runs[-1] if self.runs else ""
        items = [
            call_item(run_id, r.tool_call_id, r.tool_name, r.arguments, r.reason)
            for r in self.session.pending_approvals
        ]
        items.extend(interrupt_item(run_id, i) for i in self.session.pending_interrupts)
        return items

    def _listen(self) -> None:
        on = self.session.on
        on("run", lambda started: self.ran(started.run_id))
        on("message", self._message)
        on("text_delta", lambda e: self.emit("text_delta", {"delta": e.delta}))
        on("tool_call", self._tool_call)
        on("tool_result", self._tool_result)
        on("step", self._step)
        on("approval_requested", self._approval)
        on("interrupt_requested", self._interrupt)
        on("turn_end", self._turn_end)
        on("error", self._error)

    def _message(self, event: MessageAdded) -> None:
        message = message_adapter().dump_python(event.message, mode="json")
        self.emit("message", {"role": event.message.role, "message": message})

    def _tool_call(self, request: ToolCallRequest) -> None:
        call = request.call
        arguments = dict(request.arguments)
        self.emit(
            "tool_call", {"tool_call_id": call.id, "tool_name": call.name, "arguments": arguments}
        )

    def _tool_result(self, event: ToolResult) -> None:
        self.emit(
            "tool_result",
            {
                "tool_call_id": event.call_id,
                "tool_name": event.name,
                "result": event.result,
                "is_error": event.is_error,
            },
        )

    def _step(self, event: StepDone) -> None:
        self.emit("step", {"usage": usage_view(event.usage), "finish_reason": event.finish_reason})

    def _approval(self, event: ApprovalRequested) -> None:
        r = event.request
        self.emit(
            "approval_requested",
            {
                "tool_call_id": r.tool_call_id,
                "tool_name": r.tool_name,
                "arguments": r.arguments,
                "reason": r.reason,
            },
        )

    def _interrupt(self, event: InterruptRequested) -> None:
        self.emit("interrupt_requested", {"interrupt": event.interrupt})

    def _turn_end(self, event: TurnEnd) -> None:
        self.emit("turn_end", {"text": event.text, "messages": len(event.messages)})

    def _error(self, event: SessionError) -> None:
        error = event.error
        aborted = isinstance(error, TurnAborted)
        self.emit(
            "error", {"error": type(error).__name__, "message": str(error), "aborted": aborted}
        )


def _dumps(data: Mapping[str, object]) -> str:
    return json.dumps(data, default=str)


async def follow_session(
    served: ServedSession, after: int, *, log: EventLog, hub: Hub
) -> AsyncIterator[LoggedEvent]:
    """Yield the session's events with ``seq > after`` in order, until it settles.

    Missed events come from the store, the rest as they are written. The stream ends once
    the session is idle or waits for a decision (its ``idle`` event), or the server stops.
    """
    key = session_key(served.session.id)
    last = after
    queue = hub.follow(key)  # before reading the store: nothing falls in between
    try:
        for event in await log.read(key, last):
            yield event
            last = event.seq
        while queue is not None and not served.settled(last):
            batch = await queue.get()
            if batch is None:
                return  # the server stops
            for event in batch:
                if event.seq > last:
                    yield event
                    last = event.seq
    finally:
        hub.leave(key, queue)
