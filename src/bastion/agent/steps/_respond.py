"""Respond: the bookkeeping around one model call, between the loop's yields.

Begin a step, take the model's response into the run (usage, the transcript, the
``after_llm_call`` hook), reject a response that ended inside a tool call, close the step,
and ask ``on_roundtrip_complete`` whether to go on. Plain functions, not generators: the
loop yields their events itself, so no event crosses an extra frame.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.agent._hooks import maybe_await
from bastion.agent._scope import RunScope
from bastion.agent._step_overrides import StepOverrides, apply_overrides, check_tool_choice
from bastion.core import (
    AgentEvent,
    Model,
    ModelRequest,
    ModelResponse,
    StepEndEvent,
    ToolCall,
    ToolCallIncompleteEvent,
)
from bastion.providers import resolve_model

from ._call_model import ModelCall
from ._prepare import build_request

__all__ = [
    "after_llm_call",
    "begin_step",
    "choose_model",
    "reject_incomplete",
    "roundtrip_complete",
    "step_end",
    "stop_at_max_steps",
    "take_response",
    "tool_hint",
]


def begin_step(scope: RunScope) -> ModelRequest:
    """Number the next step and build its request (``before_llm_call`` comes after).

    Raises:
        UserError: The agent's ``tool_choice`` names a tool this step does not advertise
            (a deferred tool ``tool_search`` has not promoted yet).
    """
    state = scope.state
    state.step += 1
    scope.ctx.step = state.step
    request = build_request(scope)
    choice = request.settings.tool_choice
    if choice is not None and choice not in ("auto", "none"):
        check_tool_choice(choice, request.tools)
    return request


async def choose_model(scope: RunScope, request: ModelRequest) -> Model:
    """The model of this step, by the precedence of SPEC G-85 (see ``_tiers``).

    A ``prepare_step`` that returns :class:`StepOverrides` also changes this step's
    request: settings, ``tool_choice`` and the advertised tools.
    """
    agent = scope.agent
    hooks = agent.loop_hooks
    if hooks is not None and agent.hook_flags.prepare_step:
        override = await maybe_await(hooks.prepare_step(scope.ctx, scope.state.step))
        if isinstance(override, StepOverrides):
            apply_overrides(request, override)
            override = override.model
        if override is not None:
            return override if isinstance(override, Model) else resolve_model(override)
    tiers = agent.tiers
    if tiers is not None:
        hint, scope.model_hint = scope.model_hint, None
        if hint is not None:
            return tiers.model(hint)
        if agent.preferred_model is not None:
            return tiers.model(agent.preferred_model)
    return agent.model


def tool_hint(scope: RunScope, calls: Sequence[ToolCall]) -> str | None:
    """The model preference of the tools a step called, for the next step (G-83, T-25)."""
    tiers = scope.agent.tiers
    assert tiers is not None  # only called when the agent has tier hints
    tools = scope.agent.tools
    hints = [
        tool.preferred_model
        for call in calls
        if (tool := tools.get(call.name)) is not None and tool.preferred_model is not None
    ]
    return tiers.strongest(hints)


def take_response(scope: RunScope, call: ModelCall) -> ModelResponse:
    """Count the response's usage against its model and append it to the transcript."""
    response = call.response
    assert response is not None  # events() either set it or raised
    state = scope.state
    state.add_usage(call.model.key, response.usage)
    scope.ctx.usage = state.usage
    state.messages.append(response.message)
    return response


async def after_llm_call(scope: RunScope, response: ModelResponse) -> None:
    """Run the ``after_llm_call`` hook."""
    hooks = scope.agent.loop_hooks
    assert hooks is not None  # only called when the hook is overridden
    await maybe_await(hooks.after_llm_call(scope.ctx, response, scope.state.step))


def step_end(scope: RunScope, call: ModelCall, response: ModelResponse) -> StepEndEvent:
    """The ``step.end`` event of the current step."""
    return StepEndEvent(
        run_id=scope.run_id,
        step=scope.state.step,
        model=call.model.key,
        finish_reason=response.finish_reason,
        usage=response.usage,
    )


def reject_incomplete(
    scope: RunScope, call: ModelCall, response: ModelResponse
) -> list[AgentEvent]:
    """Fail the run on tool calls the stream never closed; none of them is executed."""
    events: list[AgentEvent] = [
        ToolCallIncompleteEvent(
            run_id=scope.run_id,
            tool_call_id=incomplete.id,
            tool_name=incomplete.name,
        )
        for incomplete in response.incomplete_tool_calls
    ]
    events.append(step_end(scope, call, response))
    names = ", ".join(repr(c.name) for c in response.incomplete_tool_calls)
    scope.state.fail(
        "incomplete_tool_call",
        f"The model's stream ended inside tool call(s) {names}; they were not executed.",
    )
    return events


async def roundtrip_complete(scope: RunScope) -> None:
    """Ask ``on_roundtrip_complete`` whether to stop (status ``stopped``, reason ``hook``)."""
    agent = scope.agent
    hooks = agent.loop_hooks
    assert hooks is not None  # only called when the hook is overridden
    state = scope.state
    if await maybe_await(hooks.on_roundtrip_complete(scope.ctx, state.step, state.usage)):
        state.status = "stopped"
        state.stop_reason = "hook"
        state.output = state.last_text() if agent.output_schema is None else None


def stop_at_max_steps(scope: RunScope) -> None:
    """End a run that used ``max_steps`` model calls while the model still asked for tools."""
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
