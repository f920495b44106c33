"""``Transcript``: a session's messages, their entries in the store, and a run's live list.

Owned by :class:`~bastion.sessions.Session`. The agent's loop appends to the run's message
list (``ctx.messages``); the session follows that list at its drain points and events and
takes each new message once, in order: appended as a ``message`` entry (``parent_id`` = the
previous entry), added to :attr:`messages`, and announced. Entries of kind ``suspended``
(the run state of a turn waiting for approvals), ``decided`` (decisions made while it
waits, one entry per ``decide()``) and ``resumed`` (all the decisions) mark a suspension in
the same chain. Writes are serialised, and each is a compare-and-set on the store's head
(``expect_head``), so the chain never forks even when other handles (other processes)
write to the same session: a write that finds the head moved takes the entries written
meanwhile (:meth:`Transcript.merge`) and appends after them, or with ``strict`` raises
:class:`~bastion.stores.SessionConflict` so that the session re-reads the whole state.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import cast

from bastion.core import AssistantMessage, JsonValue, Message, ToolCall, ToolMessage, Usage
from bastion.core._serde import message_adapter, usage_adapter
from bastion.stores import SessionConflict, SessionEntry, SessionStore, branch

from ._branch import BRANCHED

__all__ = [
    "ACTIVE_AGENT",
    "COMPACTED",
    "DECIDED",
    "RESUMED",
    "SUSPENDED",
    "Suspended",
    "Transcript",
    "agent_after",
]

SUSPENDED = "suspended"
DECIDED = "decided"
RESUMED = "resumed"
COMPACTED = "compacted"
ACTIVE_AGENT = "active_agent"
"""The agent a turn ended with changed (a handoff): ``{"agent": name}``; the next turn's."""

Suspended = tuple[Mapping[str, JsonValue], list[Mapping[str, JsonValue]]]
"""A stored suspension: the ``suspended`` payload and the ``decided`` payloads after it."""


def agent_after(entries: Sequence[SessionEntry], entry_id: str) -> str | None:
    """The agent recorded as active once the message of entry ``entry_id`` was stored.

    An ``active_agent`` entry written after that message (its turn's, before the next
    message) counts: a branch at a turn's answer continues with the agent the turn ended with.
    """
    agent: str | None = None
    found = False
    for entry in branch(entries, entries[-1].entry_id) if entries else ():
        if found and entry.kind == "message":
            break
        if entry.kind == ACTIVE_AGENT:
            named = entry.payload.get("agent")
            agent = named if isinstance(named, str) else None
        found = found or entry.entry_id == entry_id
    return agent


class Transcript:
    """The messages of one session, persisted as a chain of entries."""

    def __init__(
        self,
        session_id: str,
        store: Callable[[], Awaitable[SessionStore]],
        announce: Callable[[Message], Awaitable[None]],
        written: Callable[[], None],
    ) -> None:
        self.session_id = session_id
        self.messages: list[Message] = []
        self.ids: list[str] = []
        """The entry each message came from (a ``compacted`` entry for what it holds)."""
        self.parents: list[str | None] = []
        """The parent entry of each message's entry (where a fork would attach)."""
        self.leaf: str | None = None
        self.run_id: str | None = None
        """The run of the last turn, named by its user message's entry."""
        self.usage = Usage()
        """What the session's model calls cost, summed from its answers' entries."""
        self.agent: str | None = None
        """The agent the last turn ended with (``None``: none recorded, the session's)."""
        self.answered: tuple[Message, Usage] | None = None
        """The answer about to be stored and its call's usage (stored with it)."""
        self.dropped: list[Message] = []
        """Messages of a crashed turn its journal never held (taken again by the session)."""
        self._floor = 0  # messages a compaction entry holds: never forked off
        self._fork = False  # the next write forks the chain at ``leaf`` (a crashed turn's)
        self._continuing = False  # the next run followed is a crashed turn's, continued
        self.writing = 0
        """Store writes in flight: an abort waits for them (``written`` is called after)."""
        self._store = store
        self._announce = announce
        self._written = written
        self._live: list[Message] | None = None
        self._synced: int | None = None
        self._lock: asyncio.Lock | None = None  # made on first write, in the running loop
        self.merged = False
        """Entries of other handles were merged since :meth:`load`: the session's own view
        (a waiting turn, its decisions) may be stale, so strict writes refuse to go on."""

    def load(self, entries: Sequence[SessionEntry]) -> Suspended | None:
        """Rebuild from the stored entries (root to the last one).

        Returns:
            When the last turn still waits for decisions: the payload of its ``suspended``
            entry and of the ``decided`` entries after it; else ``None``.
        """
        self.messages = []
        self.ids = []
        self.parents = []
        self.run_id = None
        self.usage = Usage()
        self.agent = None
        self._floor = 0
        self.merged = False
        suspended: Suspended | None = None
        if not entries:
            return None
        leaf = entries[-1].entry_id
        adapter = message_adapter()
        for entry in branch(entries, leaf):
            if entry.kind == "message":
                self._take(entry, adapter.validate_python(entry.payload["message"]))
            elif entry.kind == COMPACTED:
                self._rebase(entry)
            elif entry.kind == BRANCHED:  # a branch keeps the source's first messages
                self._cut(int(cast("int", entry.payload.get("count", 0))))
            elif entry.kind == SUSPENDED:
                suspended = (entry.payload, [])
            elif entry.kind == DECIDED and suspended is not None:
                suspended[1].append(entry.payload)
            elif entry.kind == RESUMED:
                suspended = None
            elif entry.kind == ACTIVE_AGENT:
                self._activate(entry)
        self.leaf = leaf
        return suspended

    def _take(self, entry: SessionEntry, message: Message) -> None:
        self.messages.append(message)
        self.ids.append(entry.entry_id)
        self.parents.append(entry.parent_id)
        run = entry.payload.get("run")
        if isinstance(run, str):
            self.run_id = run
        usage = entry.payload.get("usage")
        if usage is not None:
            self.usage = self.usage + usage_adapter().validate_python(usage)

    def _activate(self, entry: SessionEntry) -> None:
        agent = entry.payload.get("agent")
        self.agent = agent if isinstance(agent, str) else None

    def _rebase(self, entry: SessionEntry) -> None:
        """A ``compacted`` entry: its messages replace the transcript so far."""
        adapter = message_adapter()
        stored = entry.payload.get("messages")
        items: list[object] = list(stored) if isinstance(stored, list) else []
        self.messages = [adapter.validate_python(m) for m in items]
        self.ids = [entry.entry_id] * len(self.messages)
        self.parents = [entry.entry_id] * len(self.messages)
        self._floor = len(self.messages)

    def _cut(self, count: int) -> None:
        """Keep the first ``count`` messages (what a branch shares with its source)."""
        self.messages = self.messages[:count]
        self.usage = Usage()  # a branch's cost is its own: the shared part was the source's
        self.run_id = None  # the source's turns are the source's to continue, never a branch's
        self.ids = self.ids[:count]
        self.parents = self.parents[:count]
        self._floor = len(self.messages)

    async def compacted(self, messages: Sequence[Message], info: Mapping[str, object]) -> None:
        """Store a compaction: ``messages`` replace the transcript (a ``compacted`` entry).

        ``info`` (figures, source, strategy) is stored beside them. A run being followed
        goes on from the end of its list.
        """
        adapter = message_adapter()
        payload = {**info, "messages": [adapter.dump_python(m, mode="json") for m in messages]}
        entry = await self.mark(COMPACTED, payload)
        self._rebase(entry)
        if self._live is not None:
            self._synced = len(self._live)

    async def run_compacted(self, info: Mapping[str, object]) -> bool:
        """The run being followed compacted its history: store it as the transcript.

        Returns False when no run is followed yet (nothing was stored).
        """
        live = self._live
        if live is None:
            return False
        offset = 0
        while offset < len(live) and live[offset].role == "system":
            offset += 1  # the pinned prompt is the agent's, not the conversation's
        await self.compacted(live[offset:], info)
        return True

    def follow(self, synced: int | None = None, *, continuing: bool = False) -> None:
        """A run starts; ``synced``: how many of its messages the session already holds.

        ``None``: all it holds when it is first seen (a new run, whose history came from
        the session). ``continuing``: the run is the last turn's, rebuilt from its journal
        after a crash; the session matches its messages when it first sees them.
        """
        self._live = None
        self._synced = synced
        self._continuing = continuing

    def bind(self, live: list[Message]) -> None:
        """Follow ``live``, the running run's transcript."""
        if self._live is not live:
            self._live = live
            if self._synced is None:
                self._synced = self._attach(live)

    def _attach(self, live: Sequence[Message]) -> int:
        """How many of ``live``'s messages the session holds (``live`` is first seen).

        A continued run's journal is the truth: the session holds a prefix of its messages
        (after the leading system prompt), and what it stored beyond what the journal
        recorded (a crash between the two writes) is cut off by forking the chain where
        they part; those messages are kept in :attr:`dropped`.
        """
        if not self._continuing:
            return len(live)
        self._continuing = False
        offset = 0
        while offset < len(live) and live[offset].role == "system":
            offset += 1
        held = self.messages
        common = 0
        limit = min(len(held), len(live) - offset)
        while common < limit and held[common] == live[offset + common]:
            common += 1
        if common == len(held):
            return offset + common
        turn = self._turn_start()
        if common <= max(turn, self._floor - 1):  # the histories parted before this turn
            return len(live)
        self.dropped = held[common:]
        self.leaf = self.parents[common]
        self.messages = held[:common]
        self.ids = self.ids[:common]
        self.parents = self.parents[:common]
        self._fork = True
        return offset + common

    def _turn_start(self) -> int:
        """The index of the last user message (the crashed turn's own)."""
        for index in range(len(self.messages) - 1, -1, -1):
            if self.messages[index].role == "user":
                return index
        return 0

    async def sync(self) -> None:
        """Take the messages the run appended since the last sync."""
        live = self._live
        synced = self._synced
        if live is None or synced is None:
            return
        while synced < len(live):
            message = live[synced]
            synced += 1
            self._synced = synced
            await self.add(message)

    async def settle(self, final: Sequence[Message]) -> None:
        """The run ended with transcript ``final``: take what is left, stop following."""
        if self._synced is not None or self._continuing:
            self._live = list(final)
            if self._synced is None:
                self._synced = self._attach(self._live)
            await self.sync()
        self._live = None
        self._synced = None

    def unanswered(self) -> list[ToolCall]:
        """Calls of the last assistant message that have no result (a run cut short)."""
        answered: set[str] = set()
        for message in reversed(self.messages):
            if isinstance(message, ToolMessage):
                answered.add(message.tool_call_id)
            elif isinstance(message, AssistantMessage):
                return [call for call in message.tool_calls if call.id not in answered]
            else:
                return []
        return []

    async def add(self, message: Message, *, strict: bool = False, run: str | None = None) -> None:
        """Append ``message`` to the transcript and the store; announce it (see :meth:`mark`).

        ``run``: the run of the turn this (user) message starts, stored with it so that a
        process continuing the session after a crash finds the run in the journal.
        """
        payload: dict[str, object] = {
            "message": message_adapter().dump_python(message, mode="json")
        }
        if run is not None:
            payload["run"] = run
        answered = self.answered
        if answered is not None and answered[0] is message:  # the call's cost, kept with it
            self.answered = None
            payload["usage"] = usage_adapter().dump_python(answered[1], mode="json")
        entry = await self.mark("message", payload, strict=strict)
        self._take(entry, message)
        await self._announce(message)

    async def mark(
        self, kind: str, payload: Mapping[str, object], *, strict: bool = False
    ) -> SessionEntry:
        """Append an entry of ``kind`` after the store's head (writes wait their turn, in order).

        When another handle appended since this one last wrote or read, its entries are
        merged first (their messages join :attr:`messages`, in chain order) and the entry goes
        after them.

        Raises:
            SessionConflict: With ``strict``, the head had moved, or other handles' entries
                were merged since the session was read: nothing was written (the caller
                re-reads the session and decides again).
        """
        if self._lock is None:
            self._lock = asyncio.Lock()
        self.writing += 1
        try:
            async with self._lock:
                store = await self._store()
                if strict and self.merged:  # decide again on the whole session, re-read
                    raise SessionConflict(
                        self.session_id, expected_head=self.leaf, actual_head=self.leaf
                    )
                while True:
                    try:  # a fork is written under the turn lease: no one else appends
                        entry = await store.append(
                            self.session_id,
                            kind=kind,
                            payload=payload,
                            parent_id=self.leaf,
                            expect_head=not self._fork,
                        )
                    except SessionConflict:
                        if strict:
                            raise
                        await self.merge(store)
                        continue
                    self.leaf = entry.entry_id
                    self._fork = False
                    break
        finally:
            self.writing -= 1
        self._written()
        return entry

    async def merge(self, store: SessionStore) -> None:
        """Take the entries other handles appended after :attr:`leaf` (their messages)."""
        entries = await store.entries(self.session_id)
        start = next(
            (i + 1 for i, e in enumerate(entries) if e.entry_id == self.leaf),
            0 if self.leaf is None else len(entries),
        )
        adapter = message_adapter()
        self.merged = self.merged or start < len(entries)
        for entry in entries[start:]:
            if entry.kind == "message":
                self._take(entry, adapter.validate_python(entry.payload["message"]))
            elif entry.kind == COMPACTED:
                self._rebase(entry)
            elif entry.kind == ACTIVE_AGENT:
                self._activate(entry)
        if entries:
            self.leaf = entries[-1].entry_id
