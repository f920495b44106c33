"""Respond: the bookkeeping around one model call, between the loop's yields.

Begin a step, take the model's response into the run (usage, the transcript, the
``after_llm_call`` hook), reject a response that ended inside a tool call, close the step,
and ask ``on_roundtrip_complete`` whether to go on. Plain functions, not generators: the
loop yields their events itself, so no event crosses an extra frame.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from bastion import providers
from bastion.agent._hooks import maybe_await
from bastion.agent._step_overrides import StepOverrides, apply_overrides, check_tool_choice
from bastion.agent._tiers import is_tier
from bastion.core import (
    Model,
    StepEndEvent,
    ToolCallIncompleteEvent,
)

from ._prepare import build_request, with_inbound_preamble

if TYPE_CHECKING:
    from bastion.agent._scope import RunScope
    from bastion.core import (
        AgentEvent,
        ModelRequest,
        ModelResponse,
        ToolCall,
    )

    from ._call_model import ModelCall

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
    """The model of this step, by the precedence ladder in ``_tiers``.

    A ``prepare_step`` that returns :class:`StepOverrides` also changes this step's
    request: settings, ``tool_choice``, instructions and the advertised tools. A model named
    by ``prepare_step`` or by a tool's ``"provider:model"`` hint is pinned
    (``scope.pinned_model``): its failure is not passed on to the fallback models.
    """
    config = scope.config
    hooks = config.loop_hooks
    scope.pinned_model = None
    scope.withheld_tools = frozenset()
    if hooks is not None and config.hook_flags.prepare_step:
        override = await maybe_await(hooks.prepare_step(scope.ctx, scope.state.step))
        if isinstance(override, StepOverrides):
            scope.withheld_tools = apply_overrides(request, override)
            if override.instructions is not None and scope.state.untrusted_seen:
                request.messages = with_inbound_preamble(list(request.messages))
            override = override.model
        if override is not None:
            model = override if isinstance(override, Model) else providers.resolve_model(override)
            scope.pinned_model = model
            return model
    tiers = config.tiers
    if tiers is not None:
        hint, scope.model_hint = scope.model_hint, None
        if hint is not None:  # a tool's hint: a "provider:model" spec is pinned
            model = tiers.model(hint)
            if not is_tier(hint):
                scope.pinned_model = model
            return model
        if config.preferred_model is not None:  # the agent's own choice keeps its fallbacks
            return tiers.model(config.preferred_model)
    return config.model


def tool_hint(scope: RunScope, calls: Sequence[ToolCall]) -> str | None:
    """The model preference of the tools a step called, for the next step.

    Of several tools' hints, the strongest tier wins.
    """
    tiers = scope.config.tiers
    assert tiers is not None  # only called when the agent has tier hints
    tools = scope.tools.by_name
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
    hooks = scope.config.loop_hooks
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
    config = scope.config
    hooks = config.loop_hooks
    assert hooks is not None  # only called when the hook is overridden
    state = scope.state
    if state.status != "running":  # the step already ended the run (a detected loop)
        return
    if await maybe_await(hooks.on_roundtrip_complete(scope.ctx, state.step, state.usage)):
        state.stop("hook", state.last_text() if config.output_schema is None else None)


def stop_at_max_steps(scope: RunScope) -> None:
    """End a run that used ``max_steps`` model calls while the model still asked for tools."""
    config = scope.config
    state = scope.state
    if config.on_max_steps == "return":
        state.stop("max_steps", state.last_text() if config.output_schema is None else None)
        return
    state.fail(
        "stop_condition",
        f"The run reached max_steps={config.max_steps} while the model still asked for tools. "
        "Raise max_steps, or pass RunOptions(on_max_steps='return') to end with the last answer.",
    )
