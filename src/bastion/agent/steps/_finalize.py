"""Finalize: turn the model's last answer into the run's output.

Structured output is parsed and validated; a mismatch goes back to the model with the list
of problems while the retry budget lasts, then fails the run with
``output_validation_failed``. Output guardrails run last.
"""

from __future__ import annotations

from bastion.agent._output import OutputValidationError
from bastion.agent._scope import RunScope
from bastion.core import AgentEvent, ModelResponse, UserMessage

from ._guardrails import check_output

__all__ = ["finalize"]


async def finalize(scope: RunScope, response: ModelResponse) -> list[AgentEvent]:
    """Set the run's output (status ``completed``), ask the model again, or fail the run."""
    agent = scope.agent
    state = scope.state
    text = response.message.text
    schema = agent.output_schema
    if schema is None:
        output: object = text
    else:
        try:
            output = schema.parse(text)
        except OutputValidationError as exc:
            if state.output_retries_used < agent.output_retries:
                state.output_retries_used += 1
                state.messages.append(UserMessage(content=exc.retry_prompt()))
                return []
            state.fail(
                "output_validation_failed",
                f"The model's answer did not match {schema.spec.name!r} after "
                f"{agent.output_retries} retr{'y' if agent.output_retries == 1 else 'ies'}: {exc}",
                exc,
            )
            return []
    if not agent.output_guardrails:
        state.output = output
        state.status = "completed"
        return []
    return await check_output(scope, output)
