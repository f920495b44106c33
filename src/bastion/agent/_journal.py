"""``RunJournal``: writes a run's journal entries to a store, behind the loop, with barriers.

Owned by ``RunScope`` (``scope.journal``) when the agent has a store; ``None`` otherwise, and
then the loop does no journal work at all. The loop calls :meth:`RunJournal.started`,
:meth:`model_response`, :meth:`tool_event` (for the tool lifecycle events it passes on) and
:meth:`finish`; the executor's hook bridge calls :meth:`tool_call_started` right before a
tool runs. ``_replay.py`` reads the entries back into a ``RunState``.

Write-behind with barriers: an entry is queued, and a writer task commits what is queued
as one append per batch (group commit) at the next barrier or within ``COMMIT_DELAY``
seconds, whichever comes first; so the loop does not wait for the disk after every entry,
and an entry is durable a few milliseconds after it was made even while the run waits for a
slow model. The loop waits (:meth:`RunJournal.flush`) only where
durability must come first: right before a tool runs (its ``tool_call_started`` entry is
the side-effect ledger), before a human is asked for a decision, once a resumed run has
journaled a human's decision (``interrupt_decided``), and before the run's end
(``agent.end`` goes out, the caller gets the result). A crash between barriers loses at
most the entries written since the last one, and only ones whose loss a resume repairs: a
model call whose answer was not yet durable is sent again; no tool ran since.

Sequence numbers: the store numbers a run's entries densely (1, 2, 3, …) and checks them
(``expected_seq``), while events are numbered more finely (many text deltas per model call).
Every entry therefore carries ``event_seq``, the ``seq`` of the event it corresponds to
(``agent.start``, the model call's last event, ``tool.execute.start``, the tool's end event,
``agent.end``); a resumed run numbers its events after the highest ``event_seq``.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import asdict, is_dataclass
from functools import cache
from typing import TYPE_CHECKING

from bastion.core import (
    AgentEvent,
    BastionError,
    Message,
    ToolCall,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteStartEvent,
    ToolMessage,
    Usage,
)
from bastion.security import Provenance
from bastion.stores import (
    JournalConflict,
    LeaseHeld,
    LeaseLost,
    NewEntry,
    RunBusy,
    StoreError,
)
from bastion.tools import Directive, Tool, ToolBatch, ToolOutcome

from ._binding import ApprovalMismatch, call_digest
from ._entries import (
    CompactionEntry,
    DecidedAnswer,
    DecidedApproval,
    DecidedInterrupt,
    HandoffEntry,
    InterruptDecidedEntry,
    InterruptRaisedEntry,
    JournalRecord,
    ModelResponseEntry,
    PendingCall,
    RunEndedEntry,
    RunStartedEntry,
    Spent,
    ToolCallStartedEntry,
    ToolResultEntry,
    entry_payload,
)
from ._state import RunState

if TYPE_CHECKING:
    from pydantic import TypeAdapter

    from bastion.core import (
        AgentEvent,
        ModelResponse,
        RunStatus,
        StreamChunk,
    )
    from bastion.stores import (
        LeaseKeeper,
        Stores,
    )
    from bastion.tools import Directive, Tool, ToolBatch

__all__ = [
    "COMMIT_DELAY",
    "JOURNAL_SCHEMA_VERSION",
    "RunJournal",
    "state_from_payload",
    "state_payload",
]

JOURNAL_SCHEMA_VERSION = 1
"""The ``schema_version`` of the entries this Bastion writes."""

COMMIT_DELAY = 0.002
"""Seconds an accepted entry may wait for more entries to share its commit."""

_TERMINAL: frozenset[str] = frozenset({"completed", "failed", "aborted", "stopped"})
_REPEATABLE: frozenset[str] = frozenset({"pure", "read_only"})


@cache
def _state_adapter() -> TypeAdapter[RunState]:
    from pydantic import TypeAdapter

    return TypeAdapter(RunState)


def state_payload(state: RunState) -> dict[str, object]:
    """The state as a JSON object (every field but the live exception)."""
    return _state_adapter().dump_python(state, mode="json", exclude={"exception"})


def state_from_payload(payload: Mapping[str, object]) -> RunState:
    """A state written by :func:`state_payload`."""
    return _state_adapter().validate_python(payload)


class RunJournal:
    """Appends one run's entries, serialised, with optimistic concurrency.

    Args:
        stores: The store (opened on first use through ``ready``).
        run_id: The run.
        agent: Name of the agent (recorded when the run is created).
        ready: Opens the store once; awaited before the first append.
        seq: The journal's last seq as this writer knows it (0 for a new run; ``None``:
            read it from the store before the first append, for a state the caller kept).
        keeper: The run's lease (``None``: a session's turn owns it), taken before the
            first entry is written and released once the last one is.
        recording: Keep each answer's stream chunks, as the provider sent them, in its
            ``model_response`` entry (``chunks``), so the run can be replayed.
    """

    __slots__ = (
        "_acting",
        "_opened",
        "_queue",
        "_ready",
        "_status",
        "_surfaced",
        "_timer",
        "_writer",
        "agent",
        "barrier_due",
        "decided",
        "failure",
        "keeper",
        "mark",
        "recording",
        "run_id",
        "seq",
        "started_seqs",
        "stores",
    )

    def __init__(
        self,
        stores: Stores,
        run_id: str,
        agent: str,
        ready: Callable[[], Awaitable[object]],
        seq: int | None = 0,
        *,
        keeper: LeaseKeeper | None = None,
        recording: bool = False,
    ) -> None:
        self.stores = stores
        self.recording = recording
        self.keeper = keeper
        self.run_id = run_id
        self.agent = agent
        self._ready = ready
        self.seq = seq  # the last seq known to be in the store
        self._opened = False
        self._queue: list[NewEntry] = []  # accepted, not yet handed to the store
        self._status: RunStatus | None = None  # the run status the queued entries set
        self._writer: asyncio.Task[None] | None = None
        self._timer: asyncio.TimerHandle | None = None  # the commit within COMMIT_DELAY
        self.failure: Exception | None = None  # an append failed: nothing more is written
        self._surfaced = False  # the failure was raised into the run
        # The directive a resumed run was given, journaled as interrupt_decided first.
        self.decided: Directive | None = None
        # seq of each call's tool.execute.start event, for its tool_call_started entry
        self.started_seqs: dict[str, int] = {}
        # Calls of tools that act on the world (not pure / read_only) that started: their
        # results must be durable before the next model call is sent (``barrier_due``).
        self._acting: set[str] = set()
        self.barrier_due = False
        # len(state.messages) after the last entry that accounted for the transcript:
        # messages the loop adds besides answers and tool results (an output retry's
        # prompt) go into the next model_response entry as ``inserted``.
        self.mark = 0

    def append(self, entry: JournalRecord, status: RunStatus | None = None) -> None:
        """Queue one entry after the ones accepted before; the writer commits it soon.

        Raises:
            JournalConflict: An earlier append failed because another writer appended to
                the run first (any earlier store error likewise).
        """
        self._check()
        self._queue.append(_stored(entry))
        if status is not None:
            self._status = status
        if self._writer is None and self._timer is None:
            self._timer = asyncio.get_running_loop().call_later(COMMIT_DELAY, self._commit)

    def _commit(self) -> None:
        """Start the writer on what is queued (at a barrier, or when the delay is up)."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if self._writer is None and self._queue:
            self._writer = asyncio.get_running_loop().create_task(
                self._drain(), name=f"bastion-journal-{self.run_id}"
            )

    async def flush(self) -> None:
        """Wait until every accepted entry is in the store (a barrier).

        Raises:
            JournalConflict: Another writer appended to the run first (or the store's error).
        """
        self._commit()
        writer = self._writer
        if writer is not None:
            await asyncio.shield(writer)  # a cancelled run never cuts a commit in half
        self._check()

    async def claim(self) -> None:
        """Take the run's lease (once): this process owns the run until it ends or suspends.

        Raises:
            RunBusy: A live process owns the run; nothing was written.
        """
        keeper = self.keeper
        if keeper is None or keeper.held:
            return
        try:
            await keeper.acquire()
        except LeaseHeld as held:
            self.keeper = None  # not ours: never released by this writer
            self.failure = RunBusy(self.run_id, held.lease, held.now)  # nothing is written
            self._surfaced = True
            raise self.failure from None

    async def abandon(self) -> None:
        """The run's task was cancelled from outside: commit what was accepted, drop the lease.

        The run stays ``running`` in the store, as after a crash, and any process may
        resume it at once (the side-effect ledger decides what runs again) instead of
        after the lease's time to live. Nothing raised here reaches the caller.
        """
        keeper = self.keeper
        if keeper is not None:
            keeper.stop()  # at once: if what follows is cut short, the lease still lapses
        with contextlib.suppress(Exception):
            await self.flush()
        await self.release()

    async def release(self) -> None:
        """Drop the run's lease now (idempotent): the run ended, suspended or was closed.

        A store that fails here is not the run's failure: the lease then lapses on its own.
        """
        keeper, self.keeper = self.keeper, None
        if keeper is not None:
            with contextlib.suppress(Exception):
                await keeper.release()

    def _check(self) -> None:
        keeper = self.keeper
        if keeper is not None and keeper.lost is not None and self.failure is None:
            self.failure = keeper.lost  # another process took the run over: stop writing
        if self.failure is not None:  # the run cannot be journaled any more
            self._surfaced = True
            raise self.failure

    @property
    def begun(self) -> bool:
        """Whether the run has (or will have) entries: ``run_started`` was accepted."""
        return self.seq != 0 or bool(self._queue) or self._writer is not None

    async def _drain(self) -> None:
        """The writer: commit the queue, one append per batch, until it is empty."""
        try:
            while self._queue and self.failure is None:
                keeper = self.keeper
                if keeper is not None and keeper.lost is not None:  # taken over: stop writing
                    self.failure = keeper.lost
                    self._queue.clear()
                    return
                entries, self._queue = self._queue, []
                status, self._status = self._status, None
                try:
                    seq = await self._open()
                    await self.stores.journal.append(
                        self.run_id, entries, expected_seq=seq, agent=self.agent, status=status
                    )
                except Exception as exc:  # kept for the next barrier; nothing more is written
                    self.failure = _as_store_error(self.run_id, exc)
                    self._queue.clear()
                    return
                self.seq = seq + len(entries)
        finally:
            self._writer = None

    async def _open(self) -> int:
        """Open the store, take the run's lease; learn the journal's last seq if unknown."""
        if not self._opened:
            await self._ready()
            self._opened = True
        await self.claim()
        if self.seq is None:
            self.seq = await self.stores.journal.last_seq(self.run_id)
        return self.seq

    async def started(self, state: RunState, event_seq: int) -> None:
        """``run_started``: the opened run (instructions, history, input, ids, metadata).

        Opens the store first, so a store that cannot be reached fails the run before its
        first model call.
        """
        await self._open()
        self.append(RunStartedEntry(event_seq=event_seq, state=state_payload(state)))
        self.mark = len(state.messages)

    async def decided_directive(self, state: RunState, event_seq: int) -> None:
        """``interrupt_decided``: the directive a suspended run resumes with, durable at once."""
        directive = self.decided
        self.mark = len(state.messages)
        if directive is None:
            return
        await self._open()
        if not self.begun:  # a state kept by the caller, never journaled: start from it
            self.append(RunStartedEntry(event_seq=event_seq, state=state_payload(state)))
        self.decided = None
        calls = {p.call.id: p.call for p in state.pending_approvals}
        approvals = [
            DecidedApproval(
                tool_call_id=d.tool_call_id,
                granted=d.granted,
                reason=d.reason,
                arguments=None if d.arguments is None else dict[str, object](d.arguments),
                result=d.result,
                # The exact call decided on: a replay refuses a call changed since.
                digest=call_digest(state.run_id, calls[d.tool_call_id])
                if d.tool_call_id in calls
                else None,
            )
            for d in directive.approvals
        ]
        approvals += [  # answers to questions: the call runs again with its answer
            DecidedApproval(
                tool_call_id=a.tool_call_id,
                granted=True,
                answer=DecidedAnswer(action=a.action, content=a.content),
                digest=call_digest(state.run_id, calls[a.tool_call_id])
                if a.tool_call_id in calls
                else None,
            )
            for a in directive.inputs
        ]
        interrupts = [
            DecidedInterrupt(interrupt_id=r.interrupt_id, decision=_jsonable(r.decision))
            for r in directive.interrupts
        ]
        self.append(
            InterruptDecidedEntry(event_seq=event_seq, approvals=approvals, interrupts=interrupts),
            status="running",
        )
        await self.flush()  # a barrier: a human's decision is never lost to a crash

    async def check_open(self, state: RunState) -> None:
        """Refuse a decision on a suspension the journal has already gone past.

        Called before a state the caller kept resumes: a decision is consumed once, and
        resuming the same kept state a second time would otherwise run the approved call
        again.

        Raises:
            ApprovalMismatch: The journal's last entry is not the suspension (another
                process, or an earlier resume, decided it already).
        """
        last = await self._open()
        if last == 0:
            return  # never journaled: the kept state is all there is
        [tail] = await self.stores.journal.read(self.run_id, after_seq=last - 1)
        if tail.kind != "interrupt_raised":
            raise ApprovalMismatch(
                f"Run {state.run_id} was already resumed: its journal goes on after the "
                f"suspension (entry {tail.seq} is {tail.kind!r}), so this decision was "
                "consumed and nothing was run. Load the run as it is now with "
                f"agent.resume({state.run_id!r})."
            )

    def model_response(
        self,
        state: RunState,
        model: str,
        response: ModelResponse,
        event_seq: int,
        chunks: Sequence[StreamChunk] | None = None,
    ) -> None:
        """``model_response``: the assembled answer, its usage and finish reason.

        Called once the answer is the transcript's last message. ``chunks``: the answer as
        the provider streamed it, kept when the run records its responses.
        """
        messages = state.messages
        inserted: list[Message] = [
            m for m in messages[self.mark : -1] if not isinstance(m, ToolMessage)
        ]
        self.append(
            ModelResponseEntry(
                event_seq=event_seq,
                step=state.step,
                model=model,
                message=response.message,
                usage=response.usage,
                finish_reason=response.finish_reason,
                inserted=inserted,
                incomplete=bool(response.incomplete_tool_calls),
                chunks=None if chunks is None else list(chunks),
            )
        )
        self.mark = len(messages)

    def compacted(
        self, state: RunState, spent: Sequence[tuple[str, Usage]], event_seq: int
    ) -> None:
        """``compaction``: the history as compaction left it, and what the summary cost.

        A resumed run continues from this history and never pays for the summary again.
        """
        self.append(
            CompactionEntry(
                event_seq=event_seq,
                messages=list(state.messages),
                spent=[Spent(model=m, usage=u) for m, u in spent],
            )
        )
        self.mark = len(state.messages)

    def handed_off(self, entry: HandoffEntry) -> None:
        """``handoff``: the agent that took over and the history it starts from.

        A resumed run continues with that agent from this history, without filtering (or
        summarizing) again. It is durable before the target's first model call (a barrier),
        so a crash there never makes the run redo the transfer.
        """
        self.append(entry)
        self.mark = len(entry.messages)
        self.barrier_due = True

    async def tool_call_started(
        self, tool: Tool, call: ToolCall, args: Mapping[str, object], step: int
    ) -> None:
        """``tool_call_started``, durable before the tool runs (the side-effect ledger)."""
        key = tool.idempotency_key
        if tool.side_effect_class not in _REPEATABLE:
            self._acting.add(call.id)
        self.append(
            ToolCallStartedEntry(
                event_seq=self.started_seqs.pop(call.id, 0),
                step=step,
                tool_call_id=call.id,
                tool_name=call.name,
                arguments=call.arguments,
                side_effect_class=tool.side_effect_class,
                idempotency_key=key(dict(args)) if key is not None else None,
            )
        )
        await self.flush()

    def tool_event(self, event: AgentEvent, batch: ToolBatch, step: int) -> None:
        """Journal what a tool lifecycle event passing through the loop records."""
        if isinstance(event, ToolExecuteStartEvent):
            self.started_seqs[event.tool_call_id] = event.seq
        elif isinstance(event, (ToolExecuteEndEvent, ToolExecuteErrorEvent)):
            outcome = _outcome_of(batch, event.tool_call_id)
            if outcome is not None:
                decided = batch.decided.get(event.tool_call_id)
                # A human's edit: replay puts the edited call in the transcript.
                edited = decided is not None and decided.arguments is not None and decided.granted
                self.append(result_entry(outcome, step, event.seq, edited=edited))
                if event.tool_call_id in self._acting:
                    self._acting.discard(event.tool_call_id)
                    self.barrier_due = True

    async def before_model_call(self) -> None:
        """A barrier before a model call when an acting tool's result is not yet durable.

        Without it, a process killed in the first milliseconds of the next model call
        loses a side effect's result that already happened, and a human must decide what
        a store could have known.
        """
        if self.barrier_due:
            self.barrier_due = False
            await self.flush()

    async def finish(self, state: RunState) -> None:
        """``interrupt_raised`` (a suspended run) or ``run_ended``, with the whole state.

        A run that failed before ``run_started`` was written gets it now. Waits until the
        journal is in the store, and releases the run's lease in any case.

        Raises:
            StoreError: This last write failed, or an earlier one the run has not seen
                (the caller ends the run failed and calls :meth:`end_after_failure`).
            JournalConflict: Another writer or owner took the run (nothing more is ours
                to write).
        """
        try:
            if self.failure is None:
                if not self.begun:  # the run failed before it was opened
                    await self.started(state, 1)
                self._append_end(state)
                await self.flush()
            elif self._surfaced:  # the run knows and failed: close it in the store
                await self.end_after_failure(state)
            else:
                self._check()  # a failure the run has not seen yet: raised here
        finally:
            await self.release()  # suspended or ended: any process may go on with it

    def _append_end(self, state: RunState) -> None:
        if state.status == "awaiting_approval":
            raised = InterruptRaisedEntry(
                event_seq=state.last_seq,
                state=state_payload(state),
                pending=[
                    PendingCall(
                        tool_call_id=p.call.id,
                        tool_name=p.call.name,
                        reason=p.request.reason if p.request is not None else None,
                    )
                    for p in state.pending_approvals
                ],
                interrupts=[i.id for i in state.interrupts],
            )
            self.append(raised, status="awaiting_approval")
        elif state.status in _TERMINAL:
            ended = RunEndedEntry(event_seq=state.last_seq, state=state_payload(state))
            self.append(ended, status=state.status)

    async def end_after_failure(self, state: RunState) -> None:
        """After a refused or failed append, still try to close the run in the store.

        The failed batch was written whole or not at all, so the journal ends at
        ``self.seq``: one ``run_ended`` entry there (with the state, which says why the run
        failed) keeps the run from looking ``running`` for ever. A store that is still
        unreachable refuses it too; then a resume finds the run as a crash left it. A run
        another writer or owner took over is theirs to close: nothing is written.
        """
        if isinstance(self.failure, JournalConflict | LeaseHeld | LeaseLost | RunBusy):
            return
        if state.status not in _TERMINAL or self.seq is None or self.seq == 0:
            return
        entry = _stored(RunEndedEntry(event_seq=state.last_seq, state=state_payload(state)))
        with contextlib.suppress(Exception):  # the original failure is what the run reports
            await self.stores.journal.append(
                self.run_id, [entry], expected_seq=self.seq, agent=self.agent, status=state.status
            )


def _stored(entry: JournalRecord) -> NewEntry:
    return NewEntry(
        kind=entry.kind, payload=entry_payload(entry), schema_version=JOURNAL_SCHEMA_VERSION
    )


def result_entry(
    outcome: ToolOutcome, step: int, event_seq: int, *, edited: bool = False
) -> ToolResultEntry:
    """The ``tool_result`` entry of an outcome: what ``record_outcome`` needs to replay it."""
    call = outcome.call
    return ToolResultEntry(
        event_seq=event_seq,
        step=step,
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=call.arguments,
        content=outcome.content,
        is_error=outcome.is_error,
        error_kind=outcome.error_kind,
        duration=outcome.duration,
        untrusted=outcome.untrusted,
        promote=list(outcome.promote_tools),
        spent=[Spent(model=m, usage=u) for m, u in outcome.spent],
        edited=edited,
        provenance=None if outcome.provenance is None else outcome.provenance.to_dict(),
        secrets_used=list(outcome.secrets_used),
    )


def outcome_of_entry(entry: ToolResultEntry) -> ToolOutcome:
    """The outcome a ``tool_result`` entry recorded (also as written before ``spent``)."""
    return ToolOutcome(
        call=ToolCall(id=entry.tool_call_id, name=entry.tool_name, arguments=entry.arguments),
        content=entry.content,
        is_error=entry.is_error,
        error_kind=entry.error_kind,
        duration=entry.duration,
        untrusted=entry.untrusted,
        promote_tools=tuple(entry.promote),
        spent=tuple((s.model, s.usage) for s in entry.all_spent()),
        provenance=None if entry.provenance is None else Provenance.from_dict(entry.provenance),
        secrets_used=tuple(entry.secrets_used),
    )


def _as_store_error(run_id: str, exc: Exception) -> Exception:
    """A backend's own exception (a driver error) as a :class:`StoreError` naming the run."""
    if isinstance(exc, BastionError):
        return exc
    error = StoreError(
        f"Could not write the journal of run {run_id!r}: {type(exc).__name__}: {exc}. "
        "Nothing more is written for this run; resume it once the store works again."
    )
    error.__cause__ = exc
    return error


def _outcome_of(batch: ToolBatch, tool_call_id: str) -> ToolOutcome | None:
    for p, outcome in zip(batch.prepared, batch.outcomes, strict=True):
        if p.call.id == tool_call_id or (outcome is not None and outcome.call.id == tool_call_id):
            return outcome
    return None


def _jsonable(value: object) -> object:
    """A governance decision as JSON: the form ``decision_from_dict`` reads."""
    if is_dataclass(value) and not isinstance(value, type):
        value = asdict(value)
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return repr(value)
    return value
