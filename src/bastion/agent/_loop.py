"""The run loop. It only wires the steps (``steps/``); each step owns its logic.

Every run yields ``agent.start`` first and ``agent.end`` last, whatever happens in between:
failures become status ``failed`` (preceded by ``agent.error``), aborts status ``aborted``
(preceded by ``agent.cancelling``). The loop never raises for a failed run.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncGenerator, Sequence

from bastion.core import (
    AgentEvent,
    AgentStartEvent,
    Message,
    ModelError,
    ScriptExhausted,
    StepStartEvent,
    UserPart,
)

from ._hooks import maybe_await
from ._scope import RunAborted, RunScope
from .steps._call_model import ModelCall
from .steps._dispatch_tools import record_outcomes, start_batch
from .steps._end import end_run
from .steps._finalize import finalize
from .steps._guardrails import check_input
from .steps._prepare import before_llm_call, open_run
from .steps._respond import (
    after_llm_call,
    begin_step,
    choose_model,
    reject_incomplete,
    roundtrip_complete,
    step_end,
    stop_at_max_steps,
    take_response,
    tool_hint,
)

__all__ = ["run_loop"]


async def run_loop(
    scope: RunScope,
    user_input: str | Sequence[UserPart] | None,
    history: Sequence[Message] | None,
) -> AsyncGenerator[AgentEvent, None]:
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
        if agent.hooks is not None and agent.hook_flags.before_run:
            await maybe_await(agent.hooks.before_run(scope.ctx))
        if agent.input_guardrails:
            for event in await check_input(scope):
                yield event
        while state.status == "running":
            if scope.abort is not None:
                raise RunAborted
            if state.step >= agent.max_steps:
                stop_at_max_steps(scope)
                break
            request = begin_step(scope)
            flags = agent.hook_flags
            if flags.before_llm_call:
                await before_llm_call(scope, request)
            model = await choose_model(scope) if agent.tiers or flags.prepare_step else agent.model
            yield StepStartEvent(
                run_id=scope.run_id, seq=scope.next_seq(), step=state.step, model=model.key
            )
            call = ModelCall(scope, request, model)
            async for event in call.events():
                yield event
            response = take_response(scope, call)
            if flags.after_llm_call:
                await after_llm_call(scope, response)
            if response.incomplete_tool_calls:
                for event in reject_incomplete(scope, call, response):
                    yield event
                break
            calls = response.message.tool_calls
            if calls:
                batch = start_batch(scope, calls)
                tool_events = batch.events()
                try:
                    async for event in tool_events:
                        yield event
                        scope.check_abort()
                except BaseException:
                    await tool_events.aclose()  # cancels calls still running
                    raise
                finally:
                    record_outcomes(scope, batch, calls)
                if agent.tiers is not None:
                    scope.model_hint = tool_hint(scope, calls)
                yield step_end(scope, call, response)
                if flags.on_roundtrip_complete:
                    await roundtrip_complete(scope)
                continue
            yield step_end(scope, call, response)
            for event in await finalize(scope, response):
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
    scope.ending = True  # from here on nothing could undo an abort's cancellation
    for event in await end_run(scope):
        yield event


def _failure_code(exc: Exception) -> str:
    if isinstance(exc, (ModelError, ScriptExhausted)):
        return "model_error"
    return "internal_error"
