"""The :class:`Session`: send, steer, queue, approvals, aborts, a persisted transcript.

One loop task per busy session runs its turns, one agent run each (a suspended turn's run is
resumed with a ``Directive``). Listeners are in ``_listeners.py`` and their values in
``_events.py``; the transcript's persistence in ``_transcript.py``; a waiting turn's
decisions in ``_suspension.py``; what the agent is asked for, and the link its loop calls,
in ``_link.py``; JSON lines in ``_jsonl.py``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import logging
from collections.abc import Mapping, Sequence
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, Literal

from bastion.core import (
    AssistantMessage,
    ContextCompactedEvent,
    Message,
    ModelResponse,
    ToolMessage,
    Usage,
    UserError,
    UserMessage,
    new_id,
)
from bastion.core._serde import message_adapter
from bastion.stores import (
    LeaseKeeper,
    SessionConflict,
    SessionEntry,
    SessionStore,
    new_owner,
    session_lease_key,
)
from bastion.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Deny,
    Directive,
    ToolCallDecision,
    ToolCallRequest,
)

from ._branch import BRANCHED, read_entries
from ._events import (
    ApprovalRequested,
    Compacted,
    InterruptRequested,
    MessageAdded,
    SendMode,
    SessionError,
    StepDone,
    TextDelta,
    ToolResult,
    TurnAborted,
    TurnEnd,
    check_mode,
)
from ._jsonl import dump_session, parse_export, store_rows
from ._link import Link, SessionAgent
from ._listeners import Listeners
from ._suspension import Suspension
from ._transcript import ACTIVE_AGENT, DECIDED, RESUMED, SUSPENDED, Transcript, agent_after

if TYPE_CHECKING:
    from bastion.agent import AgentStream, RunState
    from bastion.context import Compaction, ContextConfig

__all__ = ["ABORTED", "STEERED", "SentMessage", "Session"]

STEERED = "steered"
"""The reason of tool calls denied because a steering message arrived."""
ABORTED = "aborted"
"""The reason of pending approvals denied because their turn was aborted."""
CUT_SHORT = "Tool call not run: the turn was aborted."

SentStatus = Literal["pending", "running", "done", "aborted", "failed"]
PendingMode = Literal["deny", "hold"]
"""What a steering message does to calls waiting for approval: deny them, or wait."""
ContinueWith = Literal["last_agent", "session_agent"]
"""Which agent starts a turn: the one the last turn ended with, or the session's own."""

_log = logging.getLogger("bastion.sessions")


class _Waiting:
    """The type of :data:`WAITING`."""


WAITING = _Waiting()
"""What a step of the loop returns when its turn waits for a human."""


class SentMessage:
    """What :meth:`Session.send` returns: the message, its progress, and its abort.

    ``status``: ``pending`` (waiting for a turn), ``running`` (in the turn in progress,
    which may wait for approvals), ``done``, ``aborted`` or ``failed``.
    """

    __slots__ = ("_session", "mode", "status", "text")

    def __init__(self, session: Session, text: str, mode: SendMode) -> None:
        self._session = session
        self.text = text
        self.mode: SendMode = mode
        self.status: SentStatus = "pending"

    def abort(self) -> bool:
        """Abort this message's work; other messages go on.

        A message still waiting is dropped; one that joined the turn in progress aborts
        that turn (see :meth:`Session.abort`). Returns False when its work is over.
        """
        return self._session._abort_sent(self)

    def __repr__(self) -> str:
        return f"SentMessage({self.text!r}, mode={self.mode!r}, status={self.status!r})"


class Session(Listeners):
    """A conversation with an agent: ``send`` messages, listen, wait until it is idle.

    Events (``on(event, fn)``; listeners may be async): ``text_delta(delta)``,
    ``message(message)`` (user and assistant), ``step(usage, finish_reason)`` (a model call
    ended, before its tools run), ``tool_call(request)`` (may return ``Deny(reason)`` or
    ``Rewrite(arguments)``; the first decision wins), ``tool_result(call_id, name, result,
    is_error)``, ``approval_requested(request)``, ``interrupt_requested(interrupt)``,
    ``turn_end(messages, text)``, ``error(error)``.
    """

    def __init__(
        self,
        agent: SessionAgent,
        id: str | None = None,
        *,
        send_mode: str | None = None,
        on_pending_approvals: PendingMode = "deny",
        continue_with: ContinueWith = "last_agent",
    ) -> None:
        super().__init__()
        mode = agent.session_send_mode if send_mode is None else send_mode
        self.send_mode: SendMode = check_mode(mode, "send_mode")
        if on_pending_approvals not in ("deny", "hold"):
            raise UserError(
                f"on_pending_approvals={on_pending_approvals!r}: use 'deny' (a steering message "
                "denies the calls waiting for approval) or 'hold' (it waits for the decisions)."
            )
        self.on_pending_approvals: PendingMode = on_pending_approvals
        if continue_with not in ("last_agent", "session_agent"):
            raise UserError(
                f"continue_with={continue_with!r}: use 'last_agent' (a turn starts with the "
                "agent the last one handed off to) or 'session_agent' (always the session's)."
            )
        self.continue_with: ContinueWith = continue_with
        self.id = id or new_id("session")
        # Passed to each of the session's runs: state, drain points, the first tool hook.
        self._link = Link(self._drain, self._stepped, self._decide)
        self._agent = agent
        self._transcript = Transcript(self.id, self._store, self._announce, self._written)
        self._steering: list[SentMessage] = []
        self._queue: list[SentMessage] = []
        self._current: list[SentMessage] = []
        self._task: asyncio.Task[None] | None = None
        self._loaded = False
        self._records: set[asyncio.Task[Any]] = set()  # decisions being stored
        self._in_turn = False
        self._abort = False
        self._stream: AgentStream[Any] | None = None
        self._suspended: Suspension | None = None
        self._keeper: LeaseKeeper | None = None  # the turn lease, made on the first turn
        self._crashed: str | None = None  # the last turn's run, maybe cut by a crash
        self._compacting = False  # session.compact() rewrites the history: no turn starts

    @property
    def active_agent(self) -> str:
        """The agent the last turn ended with (after its handoffs); the session's at first.

        With ``continue_with="last_agent"`` the next turn starts with it (if the session's
        agent still reaches it through its handoffs). Stored with the session.
        """
        return self._transcript.agent or self._agent.name

    @property
    def messages(self) -> list[Message]:
        """The transcript: user, assistant and tool messages, oldest first."""
        return self._transcript.messages

    @property
    def usage(self) -> Usage:
        """What the session's model calls cost, every turn's (aborted ones too).

        Stored with each answer, so a reopened session (another process) knows it too.
        """
        return self._transcript.usage

    @property
    def session_state(self) -> dict[str, Any]:
        """State persisted with the session (``ctx.session_state`` in its runs)."""
        return self._link.state

    @property
    def running(self) -> bool:
        """True while the session's loop runs."""
        return self._task is not None and not self._task.done()

    @property
    def pending_approvals(self) -> list[ApprovalRequest]:
        """Tool calls the waiting turn needs decisions on, not decided yet (call order)."""
        return [] if self._suspended is None else self._suspended.pending_approvals()

    @property
    def pending_interrupts(self) -> list[dict[str, Any]]:
        """Governance interrupts the waiting turn needs decisions on (``Interrupt.to_dict()``)."""
        return [] if self._suspended is None else self._suspended.pending_interrupts()

    @classmethod
    async def resume(
        cls,
        agent: SessionAgent,
        id: str,
        *,
        send_mode: str | None = None,
        on_pending_approvals: PendingMode = "deny",
        continue_with: ContinueWith = "last_agent",
    ) -> Session:
        """Reopen session ``id`` from the agent's store (waiting, if its turn was).

        Raises:
            UserError: The store holds no session ``id``, or an option is invalid.
        """
        session = cls(
            agent,
            id,
            send_mode=send_mode,
            on_pending_approvals=on_pending_approvals,
            continue_with=continue_with,
        )
        store = await session._store()
        entries = await read_entries(store, id)
        state = await store.get_state(id)
        if not entries and state is None:
            raise UserError(f"No session {id!r} in the agent's store.")
        session._load(entries, state)
        if await session._cut_run() is not None:  # continued once the turn lease is free
            session._kick()
        return session

    def _load(self, entries: Sequence[SessionEntry], state: Mapping[str, Any] | None) -> None:
        self._loaded = True
        if state is not None:
            self._link.state.clear()
            self._link.state.update(state)
        suspended = self._transcript.load(entries)
        self._suspended = None
        stored = self._agent.store is not None and suspended is None
        self._crashed = self._transcript.run_id if stored else None
        if suspended is not None:
            stored, decided = suspended
            run = self._agent.deserialize_state(json.dumps(stored["run"]))
            self._suspended = Suspension(run)
            for payload in decided:  # decisions made before the process went away
                self._suspended.restore(payload)

    async def _cut_run(self) -> str | None:
        """The last turn's run when its journal says it is still running (a crash cut it).

        Only a run journaled in the agent's store can be continued; a turn whose run never
        reached the journal is answered as before (its open calls cut short).
        """
        run_id, self._crashed = self._crashed, None
        if run_id is None:
            return None
        record = await (await self._agent.stores()).journal.get_run(run_id)
        if record is None or record.status != "running":
            return None
        self._crashed = run_id
        return run_id

    async def _store(self) -> SessionStore:
        return (await self._agent.stores()).sessions

    async def _reload(self) -> None:
        """Read the session again: another handle wrote to it (the store is the truth)."""
        store = await self._store()
        self._load(await read_entries(store, self.id), await store.get_state(self.id))

    async def _lease(self) -> LeaseKeeper:
        """The keeper of this handle's turn lease (one owner id per handle)."""
        if self._keeper is None:
            stores = await self._agent.stores()
            self._keeper = LeaseKeeper(
                stores.leases,
                session_lease_key(self.id),
                self._agent.clock,
                ttl=stores.lease_ttl,
                owner=new_owner(),
            )
        return self._keeper

    # sending

    def send(self, text: str, mode: SendMode | None = None) -> SentMessage:
        """Send a user message; returns at once with a handle to abort its work.

        Idle: starts the loop. Running and ``steer``: the message joins before the next
        model call and tool calls not yet decided are denied (``steered``); a turn waiting
        for approvals has them denied and goes on. Running (or waiting) and ``queue``: the
        message is processed after the current turn, in the same loop.

        Raises:
            UserError: ``mode`` is not ``steer`` or ``queue``.
        """
        chosen = self.send_mode if mode is None else check_mode(mode, "mode")
        sent = SentMessage(self, text, chosen)
        (self._steering if chosen == "steer" else self._queue).append(sent)
        self._kick()
        return sent

    async def wait_for_idle(self) -> None:
        """Return when the loop settles or waits for approvals; raise the loop's error."""
        while self._records:  # decisions being stored
            await asyncio.gather(*self._records)
        task = self._task
        if task is None:
            return
        await asyncio.shield(task)

    # approvals

    def approve(self, tool_call_id: str, *, arguments: Mapping[str, Any] | None = None) -> None:
        """Approve a pending call (optionally with edited ``arguments``); see :meth:`decide`."""
        edited = dict(arguments) if arguments is not None else None
        decision = ApprovalDecision(tool_call_id=tool_call_id, granted=True, arguments=edited)
        self.decide(Directive(approvals=[decision]))

    def deny(self, tool_call_id: str, reason: str | None = None) -> None:
        """Deny a pending call; the model reads ``reason``. See :meth:`decide`."""
        decision = ApprovalDecision(tool_call_id=tool_call_id, granted=False, reason=reason)
        self.decide(Directive(approvals=[decision]))

    def decide(self, directive: Directive) -> None:
        """Decide pending approvals (and governance interrupts); returns at once.

        Once every pending call and interrupt is decided, the turn goes on where it stopped
        (``wait_for_idle()`` to wait for it). Each decision is stored at once (a ``decided``
        entry), so a session reopened in another process keeps it.

        Raises:
            UserError: The session waits for no decision, or the directive names a call or
                interrupt that is not pending.
        """
        if self._suspended is None:
            if not self._loaded and self._agent.store is not None:
                raise UserError(
                    f"Session {self.id!r} has not been read from its store yet: open it with "
                    f"`await agent.resume_session({self.id!r})` to decide what it waits for."
                )
            raise UserError(f"Session {self.id!r} is not waiting for approvals.")
        self._suspended.add(directive, self.id)
        self._record(directive)
        self._kick()

    def _record(self, directive: Directive) -> None:
        """Store a decision at once (a ``decided`` entry), before the turn resumes."""
        write = self._transcript.mark(DECIDED, Suspension.payload(directive))
        task = asyncio.get_running_loop().create_task(write)
        self._records.add(task)
        task.add_done_callback(self._records.discard)

    # aborting

    def abort(self, mode: Literal["now", "after_turn"] = "now") -> bool:
        """Abort the current turn (or let it end) and drop the messages waiting for a turn.

        ``now``: the run stops (tools are cancelled, calls waiting for approval are
        denied), every tool call gets a result, listeners get ``error`` with
        :class:`TurnAborted`. ``after_turn``: the turn in progress runs to its end (a turn
        waiting for approvals waits for them) and nothing after it runs. Either way what
        the turn did is stored (messages, and the usage of each model call), the transcript
        stays valid, and the session takes the next ``send()``. Returns False when there
        was nothing to do.

        Raises:
            UserError: ``mode`` is not ``now`` or ``after_turn``.
        """
        if mode not in ("now", "after_turn"):
            raise UserError(f"abort(mode={mode!r}): use 'now' or 'after_turn'.")
        dropped = [*self._steering, *self._queue]
        for sent in dropped:
            sent.status = "aborted"
        self._steering.clear()
        self._queue.clear()
        if mode == "after_turn":
            return bool(dropped) or self._in_turn or self._suspended is not None
        return self._abort_turn() or bool(dropped)

    def _abort_sent(self, sent: SentMessage) -> bool:
        for waiting in (self._steering, self._queue):
            if sent in waiting:
                waiting.remove(sent)
                sent.status = "aborted"
                return True
        if sent in self._current:
            return self._abort_turn()
        return False

    def _abort_turn(self) -> bool:
        if self._suspended is not None:
            self._abort = True
            self._kick()
            return True
        if not self._in_turn:
            return False
        self._abort = True
        self._written()
        return True

    def _written(self) -> None:
        """Pass a requested abort on to the run, once no store write can be cut short."""
        stream = self._stream
        if self._abort and stream is not None and not self._transcript.writing:
            stream.abort()

    # the loop

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
                session_link=self._link,
                active_agent=self._next_agent(),
            )  # its run id goes with the message: a crash's survivor continues that run
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
        stream = self._agent.resume_stream(run_id, session_link=self._link)
        self._transcript.follow(continuing=True)
        return await self._consume(stream)

    async def _resume(self, suspended: Suspension) -> str:
        stream = self._agent.stream(
            suspended.state, directive=suspended.directive(), session_link=self._link
        )
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

    async def _consume(self, stream: AgentStream[Any]) -> str:
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

    # called from the agent's run (the link and the tool gate)

    async def _drain(self, live: list[Message]) -> None:
        """Drain point before each model call: steering messages join the transcript."""
        self._transcript.bind(live)
        dropped, self._transcript.dropped = self._transcript.dropped, []
        self._steering[:0] = [  # steering a crash kept from the journal joins again
            SentMessage(self, m.content, "steer")
            for m in dropped
            if isinstance(m, UserMessage) and isinstance(m.content, str)
        ]
        while self._steering:
            sent = self._steering.pop(0)
            sent.status = "running"
            self._current.append(sent)
            live.append(UserMessage(content=sent.text))
        await self._transcript.sync()

    async def _stepped(self, live: list[Message], response: ModelResponse) -> None:
        """A model call ended: its message, then its ``step``, before any tool call."""
        self._transcript.bind(live)
        self._transcript.answered = (response.message, response.usage)
        await self._transcript.sync()
        await self._emit("step", StepDone(response.usage, response.finish_reason))

    async def _decide(self, request: ToolCallRequest) -> ToolCallDecision | None:
        self._transcript.bind(request.ctx.messages)
        await self._transcript.sync()
        if self._steering:  # steering arrived: calls not yet decided are skipped
            return Deny(STEERED)
        return await self._ask(request)

    async def _announce(self, message: Message) -> None:
        if isinstance(message, (UserMessage, AssistantMessage)):
            await self._emit("message", MessageAdded(message))

    # compaction

    async def compact(
        self, *, keep_last: int | None = None, config: ContextConfig | None = None
    ) -> Compaction:
        """Compact the transcript now, between turns; the next turns start from the result.

        Uses the agent's ``context`` settings (or ``config``). With ``keep_last``, every
        exchange older than the last ``keep_last`` is replaced by one summary (the agent's
        summarizer writes it); without, the configured strategy compacts to its target.
        Stored as a ``compacted`` entry, announced as ``compacted`` (source ``manual``).
        A transcript with nothing older to compact is left as it is (no entry, no event).

        Raises:
            UserError: A turn is running or waiting, or the agent has no ``context`` and no
                ``config`` was given.
        """
        if self.running or self._suspended is not None or self._in_turn or self._compacting:
            raise UserError(
                f"Session {self.id!r} is in a turn: compact it once idle (await "
                "session.wait_for_idle(); a waiting turn must be decided first)."
            )
        self._compacting = True  # a send() meanwhile waits for the compacted history
        try:
            keeper = await self._lease()
            await keeper.wait()  # no turn of another handle runs while the history is rewritten
            try:
                done = await self._compact_now(keep_last, config)
            finally:
                with contextlib.suppress(Exception):
                    await keeper.release()
        finally:
            self._compacting = False
            self._kick()  # messages sent meanwhile
        return done

    async def _compact_now(self, keep_last: int | None, config: ContextConfig | None) -> Compaction:
        await self._reload()
        done = await self._agent.compact(self.messages, config=config, keep_last=keep_last)
        if done.changed:
            event = Compacted(
                before_tokens=done.tokens_before,
                after_tokens=done.tokens_after,
                summary_tokens=done.summary_tokens,
                strategy=done.strategy,
                source="manual",
                duration=done.duration,
            )
            await self._transcript.compacted(done.messages, asdict(event))
            await self._emit("compacted", event)
        return done

    # JSONL

    async def export_jsonl(self) -> str:
        """The session as JSON lines: a header (id, state), then one line per entry.

        A branch's shared history is written out as its first entry (a ``compacted`` entry
        holding those messages), so the export needs nothing else to be imported.
        """
        store = await self._store()
        entries = await read_entries(store, self.id)
        own = await store.entries(self.id)
        root: dict[str, object] | None = None
        if own and own[0].kind == BRANCHED:
            shared = Transcript(self.id, self._store, self._announce, self._written)
            shared.load(entries[: len(entries) - len(own) + 1])
            adapter = message_adapter()
            root = {
                "messages": [adapter.dump_python(m, mode="json") for m in shared.messages],
                "source": "branch",
                "branched_from": dict(own[0].payload),
            }
        return await dump_session(store, self.id, root)

    # branches

    async def branch(self, at: int = -1, *, id: str | None = None) -> Session:
        """A new session sharing this one's messages up to ``messages[at]`` (inclusive).

        Nothing is copied: the branch's first entry names this session and the entry it
        grows from; this session is not changed, and what either writes later the other
        never sees. The branch starts with a copy of ``session_state`` and this handle's
        ``send_mode``.

        Raises:
            UserError: ``at`` is not an index of :attr:`messages`, or ``id`` is taken.
        """
        count = len(self.messages)
        if not isinstance(at, int) or isinstance(at, bool) or not -count <= at < count:  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"branch(at={at!r}): expected the index of a message, -{count} to {count - 1}."
            )
        index = at % count
        store = await self._store()
        branch_id = id or new_id("session")
        if await store.entries(branch_id) or await store.get_state(branch_id) is not None:
            raise UserError(f"Session {branch_id!r} already exists in the agent's store.")
        at_entry = self._transcript.ids[index]
        payload = {"session": self.id, "entry": at_entry, "count": index + 1}
        agent = agent_after(await read_entries(store, self.id), at_entry)
        await store.append(branch_id, kind=BRANCHED, payload=payload)
        await store.put_state(branch_id, dict(self.session_state))
        branched = await Session.resume(
            self._agent, branch_id, send_mode=self.send_mode, continue_with=self.continue_with
        )
        if agent is not None:  # the branch's own entry: its export keeps it too
            await branched._transcript.mark(ACTIVE_AGENT, {"agent": agent})
            branched._transcript.agent = agent
        return branched

    @classmethod
    async def import_jsonl(
        cls, agent: SessionAgent, text: str, *, send_mode: str | None = None
    ) -> Session:
        """Store a session exported by :meth:`export_jsonl` in the agent's store; open it.

        Raises:
            UserError: The text is not a session export, or the session id is taken.
        """
        header, rows = parse_export(text)
        session = cls(agent, str(header["session_id"]), send_mode=send_mode)
        store = await session._store()
        await store_rows(store, session.id, header, rows)
        session._load(await read_entries(store, session.id), await store.get_state(session.id))
        return session


def _compacted(event: ContextCompactedEvent) -> Compacted:
    return Compacted(
        before_tokens=event.before_tokens,
        after_tokens=event.after_tokens,
        summary_tokens=event.summary_tokens,
        strategy=event.strategy,
        source=event.source,
        duration=event.duration,
    )
