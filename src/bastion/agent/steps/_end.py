"""End: the closing events of every run, and the end-of-run hooks.

``agent.cancelling`` and the tool ends still owed (after an abort), ``agent.error`` (after a
failure), and ``agent.end`` last.
"""

from __future__ import annotations

from bastion.agent._hooks import maybe_await
from bastion.agent._scope import RunScope
from bastion.agent._state import RunState
from bastion.core import (
    AgentCancellingEvent,
    AgentEndEvent,
    AgentErrorEvent,
    AgentEvent,
    RunErrorInfo,
    ToolMessage,
)

from ._dispatch_tools import unreported_events

__all__ = ["end_event", "end_run", "lost_end"]


async def end_run(scope: RunScope) -> list[AgentEvent]:
    """The closing events of a run (unnumbered), after the end-of-run hooks ran."""
    state = scope.state
    events: list[AgentEvent] = []
    if state.status == "aborted":
        abort = scope.abort
        events.append(AgentCancellingEvent(run_id=scope.run_id, drain=bool(abort and abort.drain)))
        events.extend(unreported_events(scope))
        state.error = RunErrorInfo(code="run_aborted", message="The run was aborted.")
        _settle_pending_approvals(scope)
    state.finished_at = scope.clock.monotonic()
    try:
        await _end_hooks(scope)
    except Exception as exc:  # a failing hook fails the run, it does not escape it
        state.fail("hook_failed", f"A hook raised {type(exc).__name__}: {exc}", exc)
    if state.status == "failed" and state.error is not None:
        events.append(
            AgentErrorEvent(
                run_id=scope.run_id,
                code=state.error.code,
                message=state.error.message,
            )
        )
    events.append(end_event(state))
    return events


def end_event(state: RunState) -> AgentEndEvent:
    """The ``agent.end`` of ``state``'s run; ``seq`` as journaled (the loop renumbers it)."""
    return AgentEndEvent(
        run_id=state.run_id,
        seq=state.last_seq,
        status=state.status,
        output=state.output,
        usage=state.usage,
        error=state.error,
        steps=state.step,
        duration=state.finished_at - state.started_at,
    )


async def _end_hooks(scope: RunScope) -> None:
    config = scope.config
    hooks = config.hooks
    state = scope.state
    if hooks is None:
        return
    if state.status == "completed" and config.hook_flags.after_run:
        await maybe_await(hooks.after_run(scope.ctx, state.result()))
    elif state.status == "failed" and state.exception and config.hook_flags.on_error:
        await maybe_await(hooks.on_error(scope.ctx, state.exception))


def _settle_pending_approvals(scope: RunScope) -> None:
    """Apply ``abort(on_pending_approvals=...)`` to calls still waiting for a human."""
    state = scope.state
    abort = scope.abort
    if not state.pending_approvals or abort is None:
        return
    policy = abort.on_pending_approvals
    if policy == "hold":
        state.suspend()
        state.error = None
        return
    if policy == "fail":
        count = len(state.pending_approvals)
        state.fail("run_aborted", f"The run was aborted with {count} approval(s) pending.")
        return
    suspended = state.suspended
    held = suspended.results if suspended is not None else state.messages
    for pending in state.pending_approvals:
        held.append(
            ToolMessage(
                tool_call_id=pending.call.id,
                tool_name=pending.call.name,
                content="Denied: the run was aborted before a decision.",
                is_error=True,
            )
        )
    if suspended is not None:  # complete the step's results, in call order
        results = {message.tool_call_id: message for message in suspended.results}
        state.messages.extend(results[c.id] for c in suspended.calls if c.id in results)
        state.suspended = None
    state.pending_approvals.clear()


def lost_end(scope: RunScope, closing: list[AgentEvent]) -> list[AgentEvent]:
    """The closing events again, for a run whose end the store refused (now ``failed``).

    The end-of-run hooks already ran; the ``agent.error`` and ``agent.end`` are rebuilt from
    the failed state, the events before them are kept.
    """
    state = scope.state
    kept = [e for e in closing if not isinstance(e, AgentErrorEvent | AgentEndEvent)]
    error = state.error or RunErrorInfo(code="internal_error", message="The run failed.")
    ended = AgentEndEvent(
        run_id=scope.run_id,
        status=state.status,
        output=None,
        usage=state.usage,
        error=error,
        steps=state.step,
        duration=state.finished_at - state.started_at,
    )
    return [
        *kept,
        AgentErrorEvent(run_id=scope.run_id, code=error.code, message=error.message),
        ended,
    ]
