"""``TurnRunner``: a session's loop, one agent run per turn, and how a turn settles.

The loop holds the session's turn lease, runs the next turn (or resumes the waiting one, or
continues one a crash cut), passes the run's events on to the listeners, and stores what
the turn leaves: its messages, the session state, a suspension waiting for a human.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from dataclasses import asdict
from typing import TYPE_CHECKING

from bastion.core import ContextCompactedEvent, ToolMessage, UserMessage
from bastion.stores import SessionConflict

from ._events import (
    ApprovalRequested,
    Compacted,
    InterruptRequested,
    RunStarted,
    SessionError,
    TextDelta,
    ToolResult,
    TurnAborted,
    TurnEnd,
)
from ._handle import SessionHandle
from ._sent import ABORTED, CUT_SHORT, STEERED, SentMessage
from ._suspension import Suspension
from ._transcript import ACTIVE_AGENT, RESUMED, SUSPENDED

if TYPE_CHECKING:
    from bastion.agent import AgentStream, RunState

__all__ = ["TurnRunner"]

_log = logging.getLogger("bastion.sessions")


class _Waiting:
    """The type of :data:`WAITING`."""


WAITING = _Waiting()
"""What a step of the loop returns when its turn waits for a human."""


class TurnRunner(SessionHandle):
    """The loop of a session's turns (``_kick`` starts it when there is work)."""

    def _kick(self) -> None:
        if self.running or self._compacting:
            return  # the loop picks up new messages and decisions itself (or once compacted)
        if self._suspended is not None:
            steers = bool(self._steering) and self.on_pending_approvals == "deny"
            if not (self._suspended.decided() or steers or self._abort):
                return
        elif not (self._steering or self._queue or self._crashed):
            return
        self._task = asyncio.get_running_loop().create_task(self._loop())

    async def _loop(self) -> None:
        text: str | None = None
        keeper = await self._lease()
        try:
            # One turn at a time per session, across handles and processes: a turn running
            # elsewhere ends (or its process dies and its lease expires) before this one.
            await keeper.wait()
            if not self._loaded:
                await self._reload()
            while True:
                try:
                    step = await self._step()
                except SessionConflict:  # another handle wrote first: read it all again
                    await self._reload()
                    continue
                if isinstance(step, _Waiting):
                    return  # waits for a human: approve(), deny(), decide()
                if step is None:
                    break
                text = step
            if text is not None:  # a turn ran (every message may have been dropped)
                await self._emit("turn_end", TurnEnd(list(self.messages), text))
        except BaseException as exc:
            for sent in (*self._current, *self._steering, *self._queue):
                sent.status = "failed"
            self._current.clear()
            self._queue.clear()
            self._steering.clear()
            self._in_turn = False
            await self._emit_error(exc)
            raise
        finally:
            with contextlib.suppress(Exception):  # else the lease lapses on its own
                await keeper.release()

    async def _step(self) -> str | _Waiting | None:
        """Run the next turn, or resume the waiting one; return the turn's text.

        Returns ``None`` when there is nothing to do, :data:`WAITING` when the waiting turn
        still needs a human's decisions.

        Raises:
            SessionConflict: Another handle wrote to the session since this one read it;
                nothing was written and the message waits again.
        """
        run_id = await self._cut_run()
        if run_id is not None:
            return await self._continue(run_id)
        suspended = self._suspended
        if suspended is not None:
            if self._abort:
                suspended.deny_rest(ABORTED, interrupts=True)
            elif self._steering and self.on_pending_approvals == "deny":
                suspended.deny_rest(STEERED, interrupts=False)
            if not suspended.decided():
                return WAITING
            return await self._resume(suspended)
        if not (self._steering or self._queue):
            return None
        waiting = self._steering or self._queue  # steering left over goes first
        sent = waiting.pop(0)
        try:
            return await self._turn(sent)
        except SessionConflict:
            waiting.insert(0, sent)
            raise

    async def _emit_error(self, exc: BaseException) -> None:
        with contextlib.suppress(Exception):  # a failing listener must not hide ``exc``
            await self._emit("error", SessionError(exc))

    async def _turn(self, sent: SentMessage) -> str:
        sent.status = "running"
        self._current = [sent]
        self._in_turn = True
        self._abort = False
        user = UserMessage(content=sent.text)
        try:  # strict: written only after the head this handle knows, else read it again
            await self._answer_cut_calls(strict=True)  # a turn whose run was never journaled
            stream = self._agent.stream(
                None,
                message_history=[*self.messages, user],
                session_id=self.id,
                tenant_id=self.tenant_id,
                session_link=self._link,
                active_agent=self._next_agent(),
                config=self._run_config(),
            )  # its run id goes with the message: a crash's survivor continues that run
            await self._emit("run", RunStarted(stream.run_id))
            await self._transcript.add(user, strict=True, run=stream.run_id)
        except SessionConflict:
            sent.status = "pending"
            self._current = []
            self._in_turn = False
            raise
        self._transcript.follow()
        return await self._consume(stream)

    async def _continue(self, run_id: str) -> str:
        """Continue the turn a crash cut, from its run's journal, to its end.

        Recorded model calls and tool results are replayed, not repeated (the journal's
        rules for a tool started without a recorded result apply); the messages the
        session missed join its transcript, and the turn ends as any other.
        """
        self._current = []
        self._in_turn = True
        self._abort = False
        stream = self._agent.resume_stream(
            run_id, session_link=self._link, config=self._run_config()
        )
        await self._emit("run", RunStarted(stream.run_id))
        self._transcript.follow(continuing=True)
        return await self._consume(stream)

    async def _resume(self, suspended: Suspension) -> str:
        stream = self._agent.stream(
            suspended.state,
            directive=suspended.directive(),
            session_link=self._link,
            config=self._run_config(),
        )
        await self._emit("run", RunStarted(stream.run_id))
        if self._abort:  # the decided calls get their results, then the run stops
            self._abort = False
            stream.abort(drain=True)
        self._in_turn = True
        try:  # strict: another handle may have resumed (or ended) this suspension already
            await self._transcript.mark(RESUMED, suspended.record(), strict=True)
        except SessionConflict:
            self._in_turn = False
            raise
        self._suspended = None
        self._transcript.follow(len(suspended.state.messages))
        return await self._consume(stream)

    async def _consume(self, stream: AgentStream[object]) -> str:
        """Run one agent run to its end, passing its events on; settle the turn."""
        self._stream = stream
        self._written()  # an abort asked for before the run existed
        try:
            async for event in stream:
                match event.type:
                    case "text.delta":
                        await self._emit("text_delta", TextDelta(event.delta))
                    case "tool.execute.end":
                        await self._emit(
                            "tool_result",
                            ToolResult(event.tool_call_id, event.tool_name, event.result, False),
                        )
                    case "tool.execute.error":
                        await self._emit(
                            "tool_result",
                            ToolResult(event.tool_call_id, event.tool_name, event.message, True),
                        )
                    case "context.compacted" if isinstance(event, ContextCompactedEvent):
                        done = _compacted(event)  # the next turns start from what it left
                        if await self._transcript.run_compacted(asdict(done)):
                            await self._emit("compacted", done)
                    case _:
                        pass
        finally:
            self._stream = None
        result = stream.result
        await self._transcript.settle(result.messages)
        if result.status == "failed":
            error = result.error
            raise RuntimeError(error.message if error is not None else "The run failed.")
        await (await self._store()).put_state(self.id, self._link.state)
        await self._ended_with(result.last_agent)
        if result.status == "awaiting_approval" and result.state is not None:
            await self._suspend(result.state)
            return result.text
        aborted = result.status == "aborted"
        if aborted:
            await self._answer_cut_calls()
        for sent in self._current:
            sent.status = "aborted" if aborted else "done"
        self._current = []
        self._in_turn = False
        self._abort = False
        if aborted:
            await self._emit_error(TurnAborted(f"A turn of session {self.id!r} was aborted."))
        return result.text

    def _next_agent(self) -> str | None:
        """The agent the next turn starts with (``None``: the session's own)."""
        name = self._transcript.agent
        if self.continue_with == "session_agent" or name is None or name == self._agent.name:
            return None
        if self._agent.reaches(name):
            return name
        _log.warning(
            "Session %r: its last turn ended with agent %r, which agent %r no longer reaches "
            "through its handoffs; this turn starts with %r.",
            self.id,
            name,
            self._agent.name,
            self._agent.name,
        )
        return None

    async def _ended_with(self, agent: str) -> None:
        """Store the agent a turn ended with, when a handoff changed it."""
        name = None if agent == self._agent.name else agent
        if name != self._transcript.agent:
            await self._transcript.mark(ACTIVE_AGENT, {"agent": name})
            self._transcript.agent = name

    async def _answer_cut_calls(self, *, strict: bool = False) -> None:
        """Give a result to calls an abort left without one, so the transcript stays valid.

        The run answers the calls of a step it stops in; only an abort landing between
        the model's answer and its tool phase (in a ``step`` listener), or a process that
        died mid-turn (seen when the stored session is continued), leaves calls open. A
        turn running in another process is not cut short: this handle holds the turn lease
        only once that turn has ended or its process has died (its lease expired), and a
        ``strict`` write finds the results that turn stored since this handle read it.
        """
        for call in self._transcript.unanswered():
            await self._transcript.add(
                ToolMessage(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    content=CUT_SHORT,
                    is_error=True,
                ),
                strict=strict,
            )
            await self._emit("tool_result", ToolResult(call.id, call.name, CUT_SHORT, True))

    async def _suspend(self, state: RunState) -> None:
        self._suspended = Suspension(state)
        self._in_turn = False
        run = json.loads(self._agent.serialize_state(state))
        await self._transcript.mark(SUSPENDED, {"run": run})
        for request in self.pending_approvals:
            await self._emit("approval_requested", ApprovalRequested(request))
        for interrupt in self.pending_interrupts:
            await self._emit("interrupt_requested", InterruptRequested(interrupt))


def _compacted(event: ContextCompactedEvent) -> Compacted:
    return Compacted(
        before_tokens=event.before_tokens,
        after_tokens=event.after_tokens,
        summary_tokens=event.summary_tokens,
        strategy=event.strategy,
        source=event.source,
        duration=event.duration,
    )
