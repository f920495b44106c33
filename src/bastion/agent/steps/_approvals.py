"""Approvals: suspending a run on calls that wait for a human, and resuming it.

A step whose calls include pending ones still runs every other call; their results are
held (``SuspendedStep``) and the run ends with status ``awaiting_approval``. Resuming with a
``Directive`` runs the approved calls exactly once (denied ones become ``approval_denied``
results), appends every result of the step in call order, and the loop goes on.
Governance interrupts (``_govern.py``) suspend the same way; a directive decides them with
``interrupts=[InterruptResolution(...)]``.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import aclosing

from bastion.agent._binding import apply_edits, bind, check_bindings
from bastion.agent._child_answer import decided_child
from bastion.agent._governance import held_calls
from bastion.agent._scope import RunScope
from bastion.agent._state import PendingApproval, RunState, SuspendedStep
from bastion.core import AgentEvent, ToolCall, UserError
from bastion.tools import ApprovalDecision, Directive, ToolBatch

from ._dispatch_tools import pump_batch, record_outcomes, start_batch

__all__ = ["check_directive", "resume_step", "suspend_step"]


def suspend_step(scope: RunScope, batch: ToolBatch, calls: Sequence[ToolCall]) -> None:
    """Mark the run suspended on the batch's pending calls (before recording outcomes)."""
    state = scope.state
    by_id = {call.id: call for call in calls}
    state.suspended = SuspendedStep(calls=list(calls))
    state.pending_approvals = [
        bind(
            state.run_id,
            PendingApproval(call=by_id[request.tool_call_id], step=state.step, request=request),
        )
        for request in batch.pending
    ]
    state.suspend()


def check_directive(state: RunState, directive: Directive | None) -> dict[str, ApprovalDecision]:
    """The directive's decisions by call id, checked against the pending calls.

    Raises:
        UserError: The run is not waiting for approvals, a pending call has no decision,
            or a decision names a call that is not pending.
        ApprovalMismatch: A pending call is not the call its approval was asked for.
    """
    if state.status != "awaiting_approval" or (state.suspended is None and not state.interrupts):
        raise UserError(
            f"Run {state.run_id} has status {state.status!r}; only a run awaiting approval "
            "can be resumed with a directive."
        )
    _check_interrupts(state, directive)
    held = held_calls(state.interrupts)  # calls an interrupt holds: decided through it
    pending = {p.call.id for p in state.pending_approvals} - held
    decisions = {d.tool_call_id: d for d in (directive.approvals if directive else ())}
    decisions.update(_answers(state, directive, decisions))
    unknown = sorted(decisions.keys() - pending)
    if unknown:
        raise UserError(
            f"The directive decides call(s) {unknown} that are not pending in run "
            f"{state.run_id}; pending: {sorted(pending)}."
        )
    missing = sorted(pending - decisions.keys())
    if missing:
        raise UserError(
            f"Run {state.run_id} waits for decisions on call(s) {missing}; pass "
            "directive=Directive(approvals=[ApprovalDecision(tool_call_id=..., granted=...)]) "
            "(a call that asked a question: inputs=[InputAnswer(tool_call_id=..., ...)])."
        )
    requests = {p.call.id: p.request for p in state.pending_approvals}
    for call_id, decision in decisions.items():  # a parked sub-agent's call: its answer
        decisions[call_id] = decided_child(requests.get(call_id), decision)
    check_bindings(state, decisions)  # each decision applies to exactly the call it saw
    # A held call runs again once its interrupt is decided; the governor re-checks it.
    decisions.update({i: ApprovalDecision(tool_call_id=i, granted=True) for i in held})
    return decisions


def _answers(
    state: RunState, directive: Directive | None, approvals: Mapping[str, ApprovalDecision]
) -> dict[str, ApprovalDecision]:
    """The directive's answers to questions asked mid-call, as decisions to run them again.

    Raises:
        UserError: An answer to a call that asked nothing, a call both answered and
            decided, or an answer that does not fit the question (``InputAnswer.checked``).
    """
    asked = {
        p.call.id: p.request.input
        for p in state.pending_approvals
        if p.request is not None and p.request.input is not None
    }
    found: dict[str, ApprovalDecision] = {}
    for answer in directive.inputs if directive else ():
        call_id = answer.tool_call_id
        request = asked.get(call_id)
        if request is None:
            raise UserError(
                f"The directive answers call {call_id!r}, which asked no question in run "
                f"{state.run_id}; calls waiting for an answer: {sorted(asked)}."
            )
        if call_id in approvals or call_id in found:
            raise UserError(f"Call {call_id!r} is decided more than once in the directive.")
        found[call_id] = ApprovalDecision(
            tool_call_id=call_id, granted=True, answer=answer.checked(request)
        )
    return found


def _check_interrupts(state: RunState, directive: Directive | None) -> None:
    pending = [item.id for item in state.interrupts]
    given = [r.interrupt_id for r in (directive.interrupts if directive else ())]
    unknown = sorted(set(given) - set(pending))
    if unknown:
        raise UserError(
            f"The directive decides interrupt(s) {unknown} that are not pending in run "
            f"{state.run_id}; pending: {pending}."
        )
    missing = [i for i in pending if i not in given]
    if missing:
        raise UserError(
            f"Run {state.run_id} waits for decisions on interrupt(s) {missing}; pass "
            "directive=Directive(interrupts=[InterruptResolution(interrupt_id=..., "
            "decision=MutateDecision(...) | RetryDecision() | DenyDecision(reason))])."
        )


async def resume_step(
    scope: RunScope,
    decisions: dict[str, ApprovalDecision],
    held_back: Sequence[PendingApproval] = (),
) -> AsyncGenerator[AgentEvent, None]:
    """Run the decided calls, then complete the suspended step's results in call order.

    ``held_back`` are calls that stay pending whatever happens (a crash left their outcome
    unknown, see ``_recover.py``): the step suspends again on them.
    """
    state = scope.state
    suspended = state.suspended
    assert suspended is not None  # checked by check_directive
    calls = [p.call for p in state.pending_approvals]
    state.resume()
    batch = start_batch(scope, calls, decisions)
    try:
        async with aclosing(pump_batch(scope, batch)) as events:
            async for event in events:
                yield event
    finally:
        record_outcomes(scope, batch, calls)  # into suspended.results: the step is still open
        apply_edits(state, batch.decided)
        if batch.pending or held_back:
            _suspend_again(state, batch, held_back)
        else:
            state.close_step(suspended)
            state.pending_approvals = []


def _suspend_again(
    state: RunState, batch: ToolBatch, held_back: Sequence[PendingApproval] = ()
) -> None:
    """Keep the step suspended on the calls held again (e.g. a retried call over its limit).

    The finished calls' results stay in ``suspended.results``; the held calls wait for
    their new requests (a governance interrupt's call is decided through the interrupt).
    """
    before = {p.call.id: p for p in state.pending_approvals}
    state.pending_approvals = [
        bind(
            state.run_id,
            PendingApproval(
                call=before[request.tool_call_id].call,
                step=before[request.tool_call_id].step,
                request=request,
            ),
        )
        for request in batch.pending
    ]
    state.pending_approvals.extend(held_back)
    state.suspend()
