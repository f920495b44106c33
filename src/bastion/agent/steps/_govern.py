"""Govern: what the loop does with the governor's verdicts.

Called only when the agent has governance (``scope.governance`` is set):

- a refused model call fails the run (``policy_denied``; ``budget_exceeded`` with the usage
  so far, a per-run budget included; ``budget_unpriced`` when a cost limit meets a call
  with no price); a ``rounds`` limit stops it cleanly instead (status ``stopped``, stop
  reason ``budget``: LoopHooks' auto-stop, expressed as a policy);
- an interrupt nobody handled suspends the run like an approval (``awaiting_approval``),
  with the interrupt in ``RunState.interrupts`` and the governor's snapshot in
  ``RunState.governance``; resuming restores the snapshot (a new Agent instance), applies
  the decisions and retries the same action.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bastion.agent._narrow import json_arguments
from bastion.agent._state import PendingApproval, SuspendedStep
from bastion.core import (
    AssistantMessage,
    ModelResponse,
    TextPart,
    ToolMessage,
    Usage,
)
from bastion.governance import (
    BudgetUnpriced,
    Denied,
    InterruptRequired,
    MutationRefused,
    PolicyExceeded,
    SuspendedInterrupt,
)
from bastion.tools import ApprovalRequest

if TYPE_CHECKING:
    from bastion.agent._scope import RunScope
    from bastion.core import (
        Model,
        ToolCall,
    )
    from bastion.governance import (
        GovernanceError,
    )
    from bastion.tools import InterruptResolution

__all__ = [
    "finish_governance",
    "govern_round",
    "resume_governance",
    "settle",
    "substitute_response",
]


def settle(scope: RunScope, exc: GovernanceError) -> None:
    """End (or suspend) the run on a model call the governor did not let through."""
    state = scope.state
    if isinstance(exc, InterruptRequired):
        # Nothing was sent: resuming re-runs this step's model call.
        state.interrupts.append(SuspendedInterrupt(interrupt=exc.interrupt, on="model"))
        state.step -= 1
        scope.ctx.step = state.step
        state.suspend()
        return
    _answer_open_calls(scope, str(exc))
    if isinstance(exc, BudgetUnpriced):
        # The answer came, but its spending cannot be counted: fail before anything else.
        if isinstance(exc.usage, Usage):
            state.add_usage(exc.oracle.removeprefix("llm:"), exc.usage)
        state.fail("budget_unpriced", str(exc), exc)
    elif isinstance(exc, PolicyExceeded):
        if exc.limit_type == "rounds":  # a bound on the loop itself: stop cleanly
            state.stop("budget", state.last_text() if scope.config.output_schema is None else None)
            return
        state.fail("budget_exceeded", f"{exc} Usage so far: {_spent(state.usage)}.", exc)
    elif isinstance(exc, Denied):
        state.fail("policy_denied", f"{exc.oracle}: {exc.reason}", exc)
    else:
        state.fail("governance_error", f"{type(exc).__name__}: {exc}", exc)


def _spent(usage: Usage) -> str:
    cost = "" if usage.cost_usd is None else f", ${usage.cost_usd:.4f}"
    return f"{usage.requests} model calls, {usage.total_tokens:,} tokens{cost}"


def _answer_open_calls(scope: RunScope, reason: str) -> None:
    """Give the last step's calls an error result, so the transcript stays well formed."""
    messages = scope.state.messages
    if not messages or not isinstance(messages[-1], AssistantMessage):
        return
    for call in messages[-1].tool_calls:
        messages.append(
            ToolMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=f"Not run: {reason}",
                is_error=True,
            )
        )


async def govern_round(scope: RunScope, model: Model, calls: Sequence[ToolCall]) -> bool:
    """Count the tool-call round; False when its interrupt suspended the run."""
    governance = scope.governance
    assert governance is not None  # only called under governance
    try:
        await governance.begin_round(model)
    except InterruptRequired as exc:
        state = scope.state
        interrupt = exc.interrupt
        state.interrupts.append(
            SuspendedInterrupt(
                interrupt=interrupt, on="round", tool_call_ids=tuple(c.id for c in calls)
            )
        )
        state.suspended = SuspendedStep(calls=list(calls))
        state.pending_approvals = [
            PendingApproval(
                call=call, step=state.step, request=_request(call, interrupt.reason, state.step)
            )
            for call in calls
        ]
        state.suspend()
        return False
    return True


def _request(call: ToolCall, reason: str, step: int) -> ApprovalRequest:
    return ApprovalRequest(
        tool_call_id=call.id,
        tool_name=call.name,
        arguments=json_arguments(call.arguments),
        reason=reason,
        step=step,
    )


async def resume_governance(scope: RunScope, resolutions: Sequence[InterruptResolution]) -> bool:
    """Apply the directive's decisions; False (still suspended) when one was refused.

    A governor that does not know the interrupts (a new Agent instance, another process)
    first restores the snapshot taken when the run suspended.
    """
    governance = scope.governance
    assert governance is not None  # checked by check_directive
    state = scope.state
    governor = governance.governor
    known = {interrupt.id for interrupt in governor.pending()}
    if state.governance is not None and not known & {i.id for i in state.interrupts}:
        await governor.restore(state.governance)
    by_id = {r.interrupt_id: r for r in resolutions}
    remaining: list[SuspendedInterrupt] = []
    for item in state.interrupts:
        try:
            await governance.guard(governor.decide(item.id, by_id[item.id].decision))
        except MutationRefused:
            remaining.append(item)  # it stays pending; the mutation signal says why
    if remaining:
        state.interrupts = remaining
        return False
    rounds = [i for i in state.interrupts if i.on == "round"]
    state.interrupts = []
    for item in rounds:  # the round the interrupt paused is counted now
        if not await _retry_round(scope, item):
            return False
    if state.suspended is None:
        state.resume()
    return True


async def _retry_round(scope: RunScope, item: SuspendedInterrupt) -> bool:
    """Count the paused round; False when its limit interrupts again (still suspended)."""
    governance = scope.governance
    assert governance is not None
    key = item.interrupt.action
    try:
        await governance.guard(
            governance.governor.begin_round(
                key, node=governance.node, graph=governance.graph, invocation=governance.invocation
            )
        )
    except InterruptRequired as exc:  # e.g. a plain retry while the limit is still used up
        scope.state.interrupts.append(
            SuspendedInterrupt(
                interrupt=exc.interrupt, on="round", tool_call_ids=item.tool_call_ids
            )
        )
        return False
    return True


async def finish_governance(scope: RunScope) -> None:
    """Keep the counters with a suspended run; drop the run's own counters otherwise."""
    governance = scope.governance
    assert governance is not None
    state = scope.state
    interrupted = governance.take_interrupted()
    if state.status == "awaiting_approval":
        state.interrupts.extend(interrupted)
        state.governance = await governance.governor.snapshot_state()
        return
    state.governance = None
    await governance.governor.end_scope(invocation=state.run_id)


def substitute_response(model: Model, value: object) -> ModelResponse:
    """The answer an interrupt decision supplied (``ResultDecision``) for a model call.

    A :class:`ModelResponse` is used as it is; anything else becomes its text.
    """
    if isinstance(value, ModelResponse):
        return value
    return ModelResponse(
        message=AssistantMessage(parts=[TextPart(text=str(value))], model=model.key),
        usage=Usage(),
        finish_reason="stop",
        model=model.key,
    )
