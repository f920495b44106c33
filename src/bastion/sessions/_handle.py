"""``SessionHandle``: what one handle on a session knows, and what its runs call back.

Its options, the transcript and the stored state, the turn lease, the messages waiting for a
turn, the link each run calls at its drain points, and the abort of the turn in progress.
The base of :class:`~bastion.sessions.Session`; the turns themselves run in ``_turns.py``.
"""

from __future__ import annotations

import asyncio
import dataclasses
import json
from abc import abstractmethod
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from bastion.core import (
    AgentEvent,
    AssistantMessage,
    EventBus,
    Message,
    ModelResponse,
    Usage,
    UserError,
    UserMessage,
    new_id,
)
from bastion.stores import (
    LeaseKeeper,
    SessionEntry,
    SessionStore,
    new_owner,
    session_lease_key,
)
from bastion.tools import ApprovalRequest, Deny, ToolCallDecision, ToolCallRequest

from ._branch import read_entries
from ._events import MessageAdded, PendingInterrupt, SendMode, StepDone, check_mode
from ._link import Link
from ._listeners import Listeners
from ._sent import STEERED, ContinueWith, PendingMode, SentMessage
from ._suspension import Suspension
from ._transcript import Transcript

if TYPE_CHECKING:
    from bastion.agent import Agent, AgentStream, RunConfig

__all__ = ["SessionHandle"]


class SessionHandle(Listeners):
    """A handle's state on one session; :class:`~bastion.sessions.Session` adds the rest."""

    def __init__(
        self,
        agent: Agent[Any, Any],
        id: str | None = None,
        *,
        tenant_id: str | None = None,
        event_bus: EventBus | None = None,
        send_mode: str | None = None,
        on_pending_approvals: PendingMode = "deny",
        continue_with: ContinueWith = "last_agent",
    ) -> None:
        super().__init__()
        mode = agent.config.session_send_mode if send_mode is None else send_mode
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
        self.tenant_id = tenant_id
        """The tenant every turn's run belongs to (``None``: none)."""
        self._bus = event_bus
        # Passed to each of the session's runs: state, drain points, the first tool hook.
        self._link = Link(self._drain, self._stepped, self._decide)
        self._agent = agent
        self._transcript = Transcript(self.id, self._store, self._announce, self._written)
        self._steering: list[SentMessage] = []
        self._queue: list[SentMessage] = []
        self._current: list[SentMessage] = []
        self._task: asyncio.Task[None] | None = None
        self._loaded = False
        self._records: set[asyncio.Task[SessionEntry]] = set()  # decisions being stored
        self._in_turn = False
        self._abort = False
        self._stream: AgentStream[object] | None = None
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
    def pending_interrupts(self) -> list[PendingInterrupt]:
        """Governance interrupts the waiting turn needs decisions on (``Interrupt.to_dict()``)."""
        return [] if self._suspended is None else self._suspended.pending_interrupts()

    def _load(self, entries: Sequence[SessionEntry], state: Mapping[str, object] | None) -> None:
        self._loaded = True
        if state is not None:
            self._link.state.clear()
            self._link.state.update(state)
        suspended = self._transcript.load(entries)
        self._suspended = None
        stored = self._agent.config.store is not None and suspended is None
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

    def _run_config(self) -> RunConfig | None:
        """What a turn's run reads: the agent's config, with the session's event bus too."""
        ours = self._bus
        if ours is None:
            return None
        config = self._agent.config
        mine = config.event_bus
        if mine is None:
            return dataclasses.replace(config, event_bus=ours)
        both = EventBus().on("*", lambda event: _forward(ours, event))
        both.on("*", lambda event: _forward(mine, event))  # the agent's observers too
        return dataclasses.replace(config, event_bus=both)

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
                self._agent.config.clock,
                ttl=stores.lease_ttl,
                owner=new_owner(),
            )
        return self._keeper

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

    # aborting the turn in progress

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

    @abstractmethod
    def _kick(self) -> None:
        """Start the loop when there is work for it (``_turns.py``)."""


def _forward(bus: EventBus, event: AgentEvent) -> None:
    bus.emit(event.type, event)
