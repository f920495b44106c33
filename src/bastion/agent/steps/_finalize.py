"""Finalize: turn the model's last answer into the run's output.

Structured output is parsed and validated: the text of the answer (``native`` and
``prompted`` modes, or a ``tool``-mode model that answered in text anyway), or the
arguments of its call to the final-answer tool. A mismatch goes back to the model with the
list of problems (as a user message, or as the tool's error result) while the retry budget
lasts, then fails the run with ``output_validation_failed``. Verifiers judge the parsed
answer next (``_verify.py``); output guardrails run last.
"""

from __future__ import annotations

from bastion.agent._output import OUTPUT_TOOL, OutputSchema, OutputValidationError, output_call
from bastion.agent._scope import RunScope
from bastion.core import AgentEvent, ModelResponse, ToolCall, ToolMessage, UserMessage

from ._guardrails import check_output
from ._verify import verify

__all__ = ["finalize"]

_ACCEPTED = "Final answer received."
_SKIPPED = f"Not run: the answer was given with {OUTPUT_TOOL} in the same step."


async def finalize(scope: RunScope, response: ModelResponse) -> list[AgentEvent]:
    """Set the run's output (status ``completed``), ask the model again, or fail the run."""
    config = scope.config
    state = scope.state
    schema = config.output_schema
    if schema is None:
        output: object = response.message.text
    else:
        call = output_call(response.message.tool_calls)
        try:
            output = _parse(scope, schema, response, call)
        except OutputValidationError as exc:
            retries = config.output_retries
            if state.output_retries_used < retries:
                state.output_retries_used += 1
                _ask_again(scope, response, call, exc)
                return []
            state.fail(
                "output_validation_failed",
                f"The model's answer did not match {schema.spec.name!r} after "
                f"{retries} retr{'y' if retries == 1 else 'ies'}: {exc}",
                exc,
            )
            return []
        if call is not None:  # answer every call, so the transcript stays valid to resend
            _answer_calls(scope, response.message.tool_calls, call, _ACCEPTED, is_error=False)
    events: list[AgentEvent] = []
    if config.verification is not None:  # after parsing, before the output guardrails
        events, accepted = await verify(scope, config.verification, output)
        if not accepted:
            return events
    if not config.output_guardrails:
        state.complete(output)
        return events
    return [*events, *await check_output(scope, output)]


def _parse(
    scope: RunScope, schema: OutputSchema, response: ModelResponse, call: ToolCall | None
) -> object:
    if call is not None:
        return schema.parse_arguments(call.arguments)
    try:
        return schema.parse(response.message.text)
    except OutputValidationError as exc:
        if scope.output_mode == "tool":  # it answered in text: point it at the tool
            exc.problems.append(f"call the {OUTPUT_TOOL} tool with your answer")
        raise


def _ask_again(
    scope: RunScope, response: ModelResponse, call: ToolCall | None, exc: OutputValidationError
) -> None:
    if call is None:
        scope.state.messages.append(UserMessage(content=exc.retry_prompt()))
    else:
        calls = response.message.tool_calls
        _answer_calls(scope, calls, call, exc.tool_retry_prompt(), is_error=True)


def _answer_calls(
    scope: RunScope, calls: list[ToolCall], output: ToolCall, text: str, *, is_error: bool
) -> None:
    """One tool message per call: ``text`` for the final-answer call, "not run" for others."""
    messages = scope.state.messages
    for call in calls:
        mine = call is output
        messages.append(
            ToolMessage(
                tool_call_id=call.id,
                tool_name=call.name,
                content=text if mine else _SKIPPED,
                is_error=is_error if mine else True,
            )
        )
