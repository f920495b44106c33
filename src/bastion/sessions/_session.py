"""The :class:`Session`: send, steer, queue, approvals, aborts, a persisted transcript.

One loop task per busy session runs its turns, one agent run each (a suspended turn's run is
resumed with a ``Directive``). The class is built in layers, one job each: what a handle
knows and what its runs call back (``_handle.py``), the loop of turns (``_turns.py``), what a
caller does to it (``_controls.py``); here, opening, compacting, exporting and branching.
Listeners are in ``_listeners.py`` and their values in ``_events.py``; the transcript's
persistence in ``_transcript.py``; a waiting turn's decisions in ``_suspension.py``; what the
agent is asked for, and the link its loop calls, in ``_link.py``; JSON lines in ``_jsonl.py``.
"""

from __future__ import annotations

import contextlib
from dataclasses import asdict
from typing import TYPE_CHECKING, Any

from bastion.core import UserError, new_id
from bastion.core._serde import message_adapter

from ._branch import BRANCHED, read_entries
from ._controls import SessionControls
from ._events import Compacted
from ._jsonl import dump_session, parse_export, store_rows
from ._sent import ABORTED, STEERED, ContinueWith, PendingMode, SentMessage
from ._transcript import ACTIVE_AGENT, Transcript, agent_after

if TYPE_CHECKING:
    from bastion.agent import Agent
    from bastion.context import Compaction, ContextConfig
    from bastion.core import EventBus

__all__ = ["ABORTED", "STEERED", "SentMessage", "Session"]


class Session(SessionControls):
    """A conversation with an agent: ``send`` messages, listen, wait until it is idle.

    A session's turns run its :class:`~bastion.agent.Agent` (``tenant_id``: the tenant
    every turn's run belongs to; ``event_bus``: observers of every turn's run events, beside
    the agent's own). Events (``on(event, fn)``; listeners may be async):
    ``run(run_id)`` (a turn started, continued or resumed a run), ``text_delta(delta)``,
    ``message(message)`` (user and assistant), ``step(usage, finish_reason)`` (a model call
    ended, before its tools run), ``tool_call(request)`` (may return ``Deny(reason)`` or
    ``Rewrite(arguments)``; the first decision wins), ``tool_result(call_id, name, result,
    is_error)``, ``approval_requested(request)``, ``interrupt_requested(interrupt)``,
    ``turn_end(messages, text)``, ``error(error)``.
    """

    @classmethod
    async def resume(
        cls,
        agent: Agent[Any, Any],
        id: str,
        *,
        tenant_id: str | None = None,
        event_bus: EventBus | None = None,
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
            tenant_id=tenant_id,
            event_bus=event_bus,
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
        cls, agent: Agent[Any, Any], text: str, *, send_mode: str | None = None
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
