"""The run loop. It only wires the steps (``steps/``); each step owns its logic.

Every run yields ``agent.start`` first and ``agent.end`` last, whatever happens in between:
failures become status ``failed`` (preceded by ``agent.error``), aborts status ``aborted``
(preceded by ``agent.cancelling``). The loop never raises for a failed run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from contextlib import aclosing

from bastion.core import (
    AgentCancellingEvent,
    AgentEndEvent,
    AgentErrorEvent,
    AgentEvent,
    AgentStartEvent,
    Message,
    ModelError,
    RunErrorInfo,
    ScriptExhausted,
    StepEndEvent,
    StepStartEvent,
    ToolCallIncompleteEvent,
    ToolMessage,
    UserPart,
)

from ._hooks import AgentHooks, LoopHooks, maybe_await
from ._scope import RunAborted, RunScope
from .steps._call_model import ModelCall
from .steps._dispatch_tools import record_outcomes, start_batch, unreported_events
from .steps._finalize import finalize
from .steps._guardrails import check_input
from .steps._prepare import open_run, prepare_request

__all__ = ["run_loop"]


async def run_loop(
    scope: RunScope,
    user_input: str | Sequence[UserPart] | None,
    history: Sequence[Message] | None,
) -> AsyncIterator[AgentEvent]:
    """Run the agent to the end, yielding every event."""
    agent = scope.agent
    state = scope.state
    state.started_at = scope.clock.monotonic()
    yield AgentStartEvent(
        run_id=scope.run_id,
        seq=scope.next_seq(),
        agent_name=agent.name,
        model=agent.model.key,
    )
    try:
        await open_run(scope, user_input, history)
        if agent.hook_flags.before_run:
            await maybe_await(_agent_hooks(scope).before_run(scope.ctx))
        if agent.input_guardrails:
            for event in await check_input(scope):
                yield event
        while state.status == "running":
            if scope.abort is not None:
                raise RunAborted
            if state.step >= agent.max_steps:
                _stop_at_max_steps(scope)
                break
            async for event in _step(scope):
                yield event
    except RunAborted:
        state.status = "aborted"
    except asyncio.CancelledError:
        if not scope.cancel_sent:
            raise
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        state.status = "aborted"
    except Exception as exc:  # the run fails; the caller gets a result, not an exception
        state.fail(_failure_code(exc), f"{type(exc).__name__}: {exc}", exc)
    for event in await _end(scope):
        yield event


async def _step(scope: RunScope) -> AsyncIterator[AgentEvent]:
    agent = scope.agent
    state = scope.state
    state.step += 1
    scope.ctx.step = state.step
    request = await prepare_request(scope)
    call = ModelCall(scope, request)
    yield StepStartEvent(
        run_id=scope.run_id, seq=scope.next_seq(), step=state.step, model=agent.model.key
    )
    async for event in call.events():
        yield event
    response = call.response
    assert response is not None  # events() either set it or raised
    state.add_usage(call.model.key, response.usage)
    scope.ctx.usage = state.usage
    state.messages.append(response.message)
    if agent.hook_flags.after_llm_call:
        await maybe_await(_loop_hooks(scope).after_llm_call(scope.ctx, response, state.step))
    step_end = StepEndEvent(
        run_id=scope.run_id,
        seq=0,
        step=state.step,
        model=call.model.key,
        finish_reason=response.finish_reason,
        usage=response.usage,
    )
    if response.incomplete_tool_calls:
        for incomplete in response.incomplete_tool_calls:
            yield ToolCallIncompleteEvent(
                run_id=scope.run_id,
                seq=scope.next_seq(),
                tool_call_id=incomplete.id,
                tool_name=incomplete.name,
            )
        step_end.seq = scope.next_seq()
        yield step_end
        names = ", ".join(repr(c.name) for c in response.incomplete_tool_calls)
        state.fail(
            "incomplete_tool_call",
            f"The model's stream ended inside tool call(s) {names}; they were not executed.",
        )
        return
    calls = response.message.tool_calls
    if calls:
        batch = start_batch(scope, calls)
        try:
            async with aclosing(batch.events()) as tool_events:
                async for event in tool_events:
                    yield event
                    scope.check_abort()
        finally:
            record_outcomes(scope, batch, calls)
        step_end.seq = scope.next_seq()
        yield step_end
        if agent.hook_flags.on_roundtrip_complete:
            hooks = _loop_hooks(scope)
            if await maybe_await(hooks.on_roundtrip_complete(scope.ctx, state.step, state.usage)):
                state.status = "stopped"
                state.stop_reason = "hook"
                state.output = state.last_text() if agent.output_schema is None else None
        return
    step_end.seq = scope.next_seq()
    yield step_end
    for event in await finalize(scope, response):
        yield event


def _stop_at_max_steps(scope: RunScope) -> None:
    agent = scope.agent
    state = scope.state
    if agent.on_max_steps == "return":
        state.status = "stopped"
        state.stop_reason = "max_steps"
        state.output = state.last_text() if agent.output_schema is None else None
        return
    state.fail(
        "stop_condition",
        f"The run reached max_steps={agent.max_steps} while the model still asked for tools. "
        "Raise max_steps, or pass on_max_steps='return' to end with the last answer.",
    )


async def _end(scope: RunScope) -> list[AgentEvent]:
    agent = scope.agent
    state = scope.state
    ctx = scope.ctx
    events: list[AgentEvent] = []
    if state.status == "aborted":
        abort = scope.abort
        events.append(
            AgentCancellingEvent(
                run_id=scope.run_id, seq=scope.next_seq(), drain=bool(abort and abort.drain)
            )
        )
        events.extend(unreported_events(scope))
        state.error = RunErrorInfo(code="run_aborted", message="The run was aborted.")
        _settle_pending_approvals(scope)
    state.finished_at = scope.clock.monotonic()
    try:
        if state.status == "completed" and agent.hook_flags.after_run:
            await maybe_await(_agent_hooks(scope).after_run(ctx, state.result()))
        elif state.status == "failed" and state.exception and agent.hook_flags.on_error:
            await maybe_await(_agent_hooks(scope).on_error(ctx, state.exception))
    except Exception as exc:  # a failing hook fails the run, it does not escape it
        state.fail("hook_failed", f"A hook raised {type(exc).__name__}: {exc}", exc)
    if state.status == "failed" and state.error is not None:
        events.append(
            AgentErrorEvent(
                run_id=scope.run_id,
                seq=scope.next_seq(),
                code=state.error.code,
                message=state.error.message,
            )
        )
    events.append(
        AgentEndEvent(
            run_id=scope.run_id,
            seq=scope.next_seq(),
            status=state.status,
            output=state.output,
            usage=state.usage,
            error=state.error,
            steps=state.step,
            duration=state.finished_at - state.started_at,
        )
    )
    return events


def _settle_pending_approvals(scope: RunScope) -> None:
    """Apply ``abort(on_pending_approvals=...)`` to calls still waiting for a human (G-62)."""
    state = scope.state
    abort = scope.abort
    if not state.pending_approvals or abort is None:
        return
    policy = abort.on_pending_approvals
    if policy == "hold":
        state.status = "awaiting_approval"
        state.error = None
        return
    if policy == "fail":
        count = len(state.pending_approvals)
        state.fail("run_aborted", f"The run was aborted with {count} approval(s) pending.")
        return
    for pending in state.pending_approvals:
        state.messages.append(
            ToolMessage(
                tool_call_id=pending.call.id,
                tool_name=pending.call.name,
                content="Denied: the run was aborted before a decision.",
                is_error=True,
            )
        )
    state.pending_approvals.clear()


def _failure_code(exc: Exception) -> str:
    if isinstance(exc, (ModelError, ScriptExhausted)):
        return "model_error"
    return "internal_error"


def _agent_hooks(scope: RunScope) -> AgentHooks:
    hooks = scope.agent.hooks
    assert hooks is not None  # the hook flag is only set when hooks exist
    return hooks


def _loop_hooks(scope: RunScope) -> LoopHooks:
    hooks = scope.agent.loop_hooks
    assert hooks is not None
    return hooks
