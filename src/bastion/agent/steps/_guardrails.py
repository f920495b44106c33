"""Guardrail checks: input guardrails before the first model call, output guardrails at the end."""

from __future__ import annotations

from typing import Literal

from bastion.agent._guardrails import GuardrailAction, InputGuardrail, OutputGuardrail
from bastion.agent._scope import RunScope
from bastion.core import AgentEvent, GuardrailTrippedEvent, UserMessage

from ._prepare import replace_input_text

__all__ = ["check_input", "check_output"]


async def check_input(scope: RunScope) -> list[AgentEvent]:
    """Run the input guardrails in order on the latest user message.

    A block fails the run with ``guardrail_blocked`` before any model call; a rewrite
    changes what the model sees; a warning is reported and the run goes on.
    """
    events: list[AgentEvent] = []
    guardrails = scope.config.input_guardrails
    messages = scope.state.messages
    if not guardrails or not messages or not isinstance(messages[-1], UserMessage):
        return events
    message = messages[-1]
    for guardrail in guardrails:
        verdict = await guardrail.check(scope.ctx, message.text)
        if verdict.passed:
            continue
        events.append(_tripped(scope, guardrail, "input", verdict.action, verdict.reason))
        if verdict.action == "block":
            scope.state.fail(
                "guardrail_blocked",
                f"Input guardrail {guardrail.name!r} blocked the run: {verdict.reason}",
            )
            break
        if verdict.action == "rewrite":
            replace_input_text(message, str(verdict.rewrite))
    return events


async def check_output(scope: RunScope, output: object) -> list[AgentEvent]:
    """Run the output guardrails; set the run's output, or fail it on a block."""
    events: list[AgentEvent] = []
    state = scope.state
    for guardrail in scope.config.output_guardrails:
        verdict = await guardrail.check(scope.ctx, output)
        if verdict.passed:
            continue
        events.append(_tripped(scope, guardrail, "output", verdict.action, verdict.reason))
        if verdict.action == "block":
            state.fail(
                "guardrail_blocked",
                f"Output guardrail {guardrail.name!r} blocked the output: {verdict.reason}",
            )
            return events
        if verdict.action == "rewrite":
            output = verdict.rewrite
    state.complete(output)
    return events


def _tripped(
    scope: RunScope,
    guardrail: InputGuardrail | OutputGuardrail,
    stage: Literal["input", "output"],
    action: GuardrailAction,
    reason: str,
) -> GuardrailTrippedEvent:
    return GuardrailTrippedEvent(
        run_id=scope.run_id,
        guardrail=guardrail.name,
        stage=stage,
        action=action,
        reason=reason,
    )
