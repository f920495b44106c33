"""Replay: rebuild a run's ``RunState`` from its journal, and decide how it goes on.

Called by ``Agent.resume_stream``. Entries fold into the state in order: ``run_started``,
``interrupt_raised`` and ``run_ended`` carry the whole state (checkpoints); a
``model_response`` appends the answer (and any message the loop inserted before it) and
counts its usage; a ``tool_result`` records the outcome exactly as the live loop did. A
completed model call or tool call is thus never made again.

What is left open by a crash becomes a :class:`Recovery`: the calls of the last step that
have no result (run again when they never started, or when they are ``pure`` /
``read_only`` or carry an idempotency key; otherwise held as "outcome unknown after crash"
for a human), or a final answer whose output was not yet taken.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from bastion.core import ModelResponse, ToolMessage, UserError
from bastion.stores import CorruptRecord, JournalUnreadable
from bastion.tools import ApprovalDecision, ApprovalRequest, InputAnswer

from ._binding import apply_edits, bind, check_bindings
from ._entries import (
    CompactionEntry,
    DecidedApproval,
    HandoffEntry,
    InterruptDecidedEntry,
    InterruptRaisedEntry,
    JournalRecord,
    ModelResponseEntry,
    RunEndedEntry,
    RunStartedEntry,
    ToolCallStartedEntry,
    ToolResultEntry,
    read_entry,
)
from ._handoffs import find_agent
from ._journal import JOURNAL_SCHEMA_VERSION, outcome_of_entry, state_from_payload
from ._narrow import json_arguments
from ._output import output_call
from ._state import PendingApproval, SuspendedStep
from .steps._dispatch_tools import record_outcome

if TYPE_CHECKING:
    from bastion.core import ToolCall
    from bastion.stores import EntryKind, JournalEntry, Stores
    from bastion.tools import InputRequest, Tool

    from ._config import RunConfig
    from ._state import RunState

__all__ = ["OUTCOME_UNKNOWN", "Recovery", "Replayed", "load_run"]

OUTCOME_UNKNOWN = (
    "Outcome unknown after crash: the call to {name!r} started but its result was never "
    "recorded, and the tool is {kind!r} without an idempotency key, so running it again "
    "could repeat its effect. Decide with ApprovalDecision(result='...') if it happened, "
    "granted=True to run it again, or granted=False to fail the call."
)
_SAFE = ("pure", "read_only")
_REPLAYED: tuple[EntryKind, ...] = (
    "run_started",
    "model_response",
    "tool_call_started",
    "tool_result",
    "interrupt_raised",
    "interrupt_decided",
    "compaction",
    "handoff",
    "run_ended",
)


@dataclass(kw_only=True, slots=True)
class Recovery:
    """How a run that was ``running`` when its process died goes on.

    Attributes:
        decisions: Decisions for the calls to run (see ``resume_step``).
        unknown: Calls held for a human: their outcome is unknown.
        final: A final answer whose output was not yet taken (finalize it).
        open_step: True when the last step's tool calls are not all done.
        incomplete: The last answer ended inside tool calls: fail the run, as the live
            loop does, without running any of its calls.
    """

    decisions: dict[str, ApprovalDecision] = field(default_factory=dict[str, ApprovalDecision])
    unknown: list[PendingApproval] = field(default_factory=list[PendingApproval])
    final: ModelResponse | None = None
    open_step: bool = False
    incomplete: bool = False


@dataclass(kw_only=True, slots=True)
class Replayed:
    """A run rebuilt from its journal.

    Attributes:
        state: The state after the last entry (``last_seq``: the highest event seq).
        seq: The journal's last seq (the next append's ``expected_seq``).
        mark: How many transcript messages the journal accounted for.
        recovery: How a run left ``running`` goes on; ``None`` for a suspended or ended run.
    """

    state: RunState
    seq: int
    mark: int
    recovery: Recovery | None


class _Fold:
    """The fold of entries into a state (one pass, in order)."""

    def __init__(self, config: RunConfig) -> None:
        self.root = config
        self.tools = config.tools.by_name
        self.output_tool = config.output_schema is not None
        self.state: RunState | None = None
        self.step_calls: list[ToolCall] = []  # calls of the last answer (no checkpoint since)
        self.started: dict[str, ToolCallStartedEntry] = {}
        self.results: set[str] = set()
        self.decided: dict[str, ApprovalDecision] = {}
        self.final: ModelResponse | None = None
        self.incomplete = False
        self.event_seq = 0
        self.mark = 0

    def apply(self, entry: JournalRecord) -> None:
        self.event_seq = max(self.event_seq, entry.event_seq)
        if isinstance(entry, (RunStartedEntry, InterruptRaisedEntry, RunEndedEntry)):
            self.state = state_from_payload(entry.state)
            self._use(self.state.active_agent)
            self._reset()
            return
        state = self.state
        if state is None:
            raise UserError(f"Journal of the run starts with {entry.kind!r}, not 'run_started'.")
        if isinstance(entry, ModelResponseEntry):
            self._model_response(state, entry)
        elif isinstance(entry, ToolCallStartedEntry):
            self.started[entry.tool_call_id] = entry
        elif isinstance(entry, ToolResultEntry):
            self._tool_result(state, entry)
        elif isinstance(entry, CompactionEntry):
            self._compaction(state, entry)
        elif isinstance(entry, HandoffEntry):
            self._handoff(state, entry)
        else:
            self._decided(state, entry)

    def _decided(self, state: RunState, entry: InterruptDecidedEntry) -> None:
        """A directive: the decided calls run (again) from here."""
        self._reset()
        state.resume()
        asked = {
            p.call.id: p.request.input
            for p in state.pending_approvals
            if p.request is not None and p.request.input is not None
        }
        self.decided = {d.tool_call_id: _decision(d, asked) for d in entry.approvals}
        check_bindings(state, self.decided)  # the stored call is the one decided on
        apply_edits(state, self.decided)
        if state.suspended is not None:
            self.step_calls = [p.call for p in state.pending_approvals]

    def _reset(self) -> None:
        self.step_calls = []
        self.started = {}
        self.results = set()
        self.decided = {}
        self.final = None
        self.incomplete = False
        if self.state is not None:
            self.mark = len(self.state.messages)

    def _compaction(self, state: RunState, entry: CompactionEntry) -> None:
        """The history as compaction left it; the summary's cost is counted once more."""
        state.messages[:] = entry.messages
        for spent in entry.spent:
            state.add_usage(spent.model, spent.usage)
        self.mark = len(state.messages)

    def _use(self, agent: str | None) -> None:
        """Read the calls that follow as the tools of ``agent`` (``None``: the run's own)."""
        config = self.root if agent is None else find_agent(self.root, agent)
        if config is None:
            raise UserError(
                f"The run was handed off to agent {agent!r}, which agent {self.root.name!r} "
                "cannot reach through its handoffs: give it the same handoffs (and "
                "agent_registry) it had when the run started."
            )
        self.tools = config.tools.by_name
        self.output_tool = config.output_schema is not None

    def _handoff(self, state: RunState, entry: HandoffEntry) -> None:
        """The target took over, from the history the filter kept."""
        self._reset()
        state.messages[:] = entry.messages
        for spent in entry.spent:
            state.add_usage(spent.model, spent.usage)
        state.active_agent = None if entry.to_agent == state.agent_name else entry.to_agent
        state.handoffs += 1
        state.handoff_step = entry.step
        self._use(state.active_agent)
        self.mark = len(state.messages)

    def _model_response(self, state: RunState, entry: ModelResponseEntry) -> None:
        self._reset()
        state.messages.extend(entry.inserted)
        message = entry.message
        usage = entry.usage
        state.step = entry.step
        state.add_usage(entry.model, usage)
        state.messages.append(message)
        self.mark = len(state.messages)
        if entry.incomplete:  # the live loop failed the run: none of its calls ran
            self.incomplete = True
            return
        self.step_calls = list(message.tool_calls)
        if self.output_tool and output_call(message.tool_calls) is not None:
            self.step_calls = []  # the final answer, given with the final-answer tool
        if not self.step_calls:
            self.final = ModelResponse(
                message=message, usage=usage, finish_reason=entry.finish_reason, model=entry.model
            )

    def _tool_result(self, state: RunState, entry: ToolResultEntry) -> None:
        outcome = outcome_of_entry(entry)
        if entry.edited:  # approved with edited arguments: the transcript shows them
            call = outcome.call
            edit = ApprovalDecision(tool_call_id=call.id, granted=True, arguments=call.args())
            apply_edits(state, {call.id: edit})
        suspended = state.suspended
        target = state.messages if suspended is None else suspended.results
        record_outcome(state, self.tools, outcome.call, outcome, target)
        self.results.add(outcome.call.id)
        if suspended is not None and all(
            p.call.id in self.results for p in state.pending_approvals
        ):  # a resumed step completed, as resume_step completes it
            state.close_step(suspended)
            state.pending_approvals = []
            self.step_calls = []

    def recovery(self, state: RunState) -> Recovery | None:
        if state.status != "running":
            return None
        if self.incomplete:
            return Recovery(incomplete=True)
        if state.suspended is not None:  # crashed while a directive's calls ran
            missing = [p.call for p in state.pending_approvals if p.call.id not in self.results]
            return self._open_step(state, missing)
        missing = [c for c in self.step_calls if c.id not in self.results]
        if missing:
            ids = {c.id for c in self.step_calls}
            done: list[ToolMessage] = []
            messages = state.messages
            while messages:
                last = messages[-1]
                if not isinstance(last, ToolMessage) or last.tool_call_id not in ids:
                    break
                done.insert(0, last)
                messages.pop()
            state.suspended = SuspendedStep(calls=list(self.step_calls), results=done)
            return self._open_step(state, missing)
        return Recovery(final=self.final)

    def _open_step(self, state: RunState, missing: Sequence[ToolCall]) -> Recovery:
        recovery = Recovery(open_step=True)
        runnable: list[PendingApproval] = []
        for call in missing:
            started = self.started.get(call.id)
            tool = self.tools.get(call.name)
            if started is None:  # never started: the gate decides it again (or the directive)
                decided = self.decided.get(call.id)
                if decided is not None:
                    recovery.decisions[call.id] = decided
                runnable.append(PendingApproval(call=call, step=state.step))
            elif tool is not None and _safe_to_repeat(tool, started):
                arguments = started.arguments
                edited = json.loads(arguments) if arguments != call.arguments else None
                decided = self.decided.get(call.id)  # an answer it was running with
                recovery.decisions[call.id] = ApprovalDecision(
                    tool_call_id=call.id,
                    granted=True,
                    arguments=edited,
                    answer=decided.answer if decided is not None else None,
                )
                runnable.append(PendingApproval(call=call, step=state.step))
            else:
                kind = tool.side_effect_class if tool is not None else "unknown"
                request = ApprovalRequest(
                    tool_call_id=call.id,
                    tool_name=call.name,
                    arguments=json_arguments(started.arguments),
                    classification=tool.classification() if tool is not None else {},
                    reason=OUTCOME_UNKNOWN.format(name=call.name, kind=kind),
                    step=state.step,
                )
                recovery.unknown.append(
                    bind(state.run_id, PendingApproval(call=call, step=state.step, request=request))
                )
        state.pending_approvals = runnable
        return recovery


def _safe_to_repeat(tool: Tool, started: ToolCallStartedEntry) -> bool:
    """The side-effect ledger: may a call that started, with no result, run again?"""
    if tool.side_effect_class in _SAFE:
        return True
    return tool.idempotency_key is not None and started.idempotency_key is not None


def _decision(item: DecidedApproval, asked: Mapping[str, InputRequest]) -> ApprovalDecision:
    """An approval of an ``interrupt_decided`` entry (an answer bound to its question)."""
    answer = None
    if item.answer is not None:
        answer = InputAnswer(
            tool_call_id=item.tool_call_id,
            action=item.answer.action,
            content=item.answer.content,
            request=asked.get(item.tool_call_id),
        )
    return ApprovalDecision(
        tool_call_id=item.tool_call_id,
        granted=item.granted,
        reason=item.reason,
        arguments=item.arguments,
        result=item.result,
        digest=item.digest,
        answer=answer,
    )


def check_entry(run_id: str, entry: JournalEntry, position: int) -> None:
    """Refuse an entry replay cannot use safely (skipping it could run a tool again).

    Raises:
        JournalUnreadable: A gap in the seqs, a newer or invalid ``schema_version``, a kind
            this Bastion does not replay, or a journal that does not start with
            ``run_started``.
    """
    if entry.seq != position:
        raise JournalUnreadable(
            run_id, entry.seq, f"comes at position {position}: the journal has a gap."
        )
    version = entry.schema_version
    if version > JOURNAL_SCHEMA_VERSION:
        raise JournalUnreadable(
            run_id,
            entry.seq,
            f"({entry.kind}) was written with schema_version {version}, newer than the "
            f"{JOURNAL_SCHEMA_VERSION} this Bastion reads: upgrade bastion to resume it.",
        )
    if version < 1:
        raise JournalUnreadable(
            run_id, entry.seq, f"({entry.kind}) has an invalid schema_version {version!r}."
        )
    if entry.kind not in _REPLAYED:
        raise JournalUnreadable(
            run_id,
            entry.seq,
            f"is of kind {entry.kind!r}, which this Bastion does not replay (it replays "
            + ", ".join(repr(k) for k in _REPLAYED)
            + ").",
        )
    if position == 1 and entry.kind != "run_started":
        raise JournalUnreadable(run_id, 1, f"is {entry.kind!r}, not 'run_started'.")
    if not isinstance(entry.payload.get("event_seq", 0), int):
        raise JournalUnreadable(run_id, entry.seq, "has an event_seq that is not a number.")


async def load_run(stores: Stores, run_id: str, config: RunConfig) -> Replayed:
    """Read a run's journal and rebuild its state.

    Raises:
        UserError: The store has no journal for ``run_id``, or it belongs to another agent.
    """
    try:
        entries = await stores.journal.read(run_id)
    except CorruptRecord as exc:
        raise JournalUnreadable(run_id, exc.seq or 0, f"is damaged: {exc}") from exc
    if not entries:
        raise UserError(
            f"No journal for run {run_id!r} in {stores.url!r}: check the run id and that "
            "this agent uses the store the run was started with."
        )
    fold = _Fold(config)
    for position, entry in enumerate(entries, start=1):
        check_entry(run_id, entry, position)
        try:
            fold.apply(read_entry(entry.kind, entry.payload))
        except (KeyError, TypeError, ValueError, AttributeError) as exc:  # incl. validation
            problem = f"({entry.kind}) is malformed: {type(exc).__name__}: {exc}."
            raise JournalUnreadable(run_id, entry.seq, problem) from exc
    state = fold.state
    assert state is not None  # the first entry is run_started (checked by check_entry)
    if state.agent_name != config.name:
        raise UserError(f"Run {run_id} belongs to agent {state.agent_name!r}, not {config.name!r}.")
    state.last_seq = max(state.last_seq, fold.event_seq)
    recovery = fold.recovery(state)
    mark = min(fold.mark, len(state.messages))
    return Replayed(state=state, seq=entries[-1].seq, mark=mark, recovery=recovery)
