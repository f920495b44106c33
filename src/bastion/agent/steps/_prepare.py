"""Prepare: the run's opening messages, and each step's model request.

Instructions (a string or a function of the context, sync or async) are resolved once per
run and pinned as the leading system message; an empty string adds none. Leading system
messages of a given history are replaced by this run's instructions.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, cast

from bastion.agent._hooks import maybe_await
from bastion.agent._output import OUTPUT_TOOL
from bastion.agent._scope import RunScope
from bastion.core import (
    AssistantMessage,
    Lazy,
    Message,
    Model,
    ModelRequest,
    ReasoningPart,
    RunContext,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserError,
    UserMessage,
    UserPart,
)
from bastion.security import INBOUND_PREAMBLE

if TYPE_CHECKING:
    from bastion.context import ResultKeeper

__all__ = [
    "before_llm_call",
    "result_keeper",
    "build_request",
    "shape_output",
    "open_run",
    "replace_input_text",
    "resolve_deps",
    "with_inbound_preamble",
]


async def open_run(
    scope: RunScope,
    user_input: str | Sequence[UserPart] | None,
    history: Sequence[Message] | None,
) -> None:
    """Make lazy dependencies, then fill the messages: instructions, history, user message."""
    await resolve_deps(scope.ctx)
    config = scope.config
    instructions = config.instructions
    if callable(instructions):
        instructions = await maybe_await(instructions(scope.ctx))
    messages = scope.state.messages
    if instructions:
        messages.append(SystemMessage(content=str(instructions)))
    if history:
        start = 0
        while start < len(history) and isinstance(history[start], SystemMessage):
            start += 1
        messages.extend(history[start:])
    if user_input is not None:
        content: str | list[UserPart] = (
            user_input if isinstance(user_input, str) else list(user_input)
        )
        messages.append(UserMessage(content=content))


async def resolve_deps(ctx: RunContext[object]) -> None:
    """Replace ``Lazy`` dependencies (the whole value, or values of a dict) by their results."""
    deps = ctx.deps
    if not isinstance(deps, dict):
        ctx.deps = await _resolved(deps)  # the same value unless it is a Lazy
    else:
        given = cast("dict[object, object]", deps)  # isinstance leaves keys and values unknown
        if any(isinstance(v, Lazy) for v in given.values()):
            ctx.deps = {key: await _resolved(value) for key, value in given.items()}


async def _resolved(value: object) -> object:
    """What a ``Lazy`` dependency makes; any other value as it is."""
    if not isinstance(value, Lazy):
        return value
    return await cast("Lazy[object]", value).resolve()  # isinstance leaves its type unknown


def replace_input_text(message: UserMessage, text: str) -> None:
    """Replace the text of a user message, keeping any non-text parts."""
    if isinstance(message.content, str):
        message.content = text
        return
    others = [p for p in message.content if not isinstance(p, TextPart)]
    message.content = [TextPart(text=text), *others]


def build_request(scope: RunScope) -> ModelRequest:
    """Build the model request of the current step.

    The history is checked first (only what the run added since the last check): a tool call
    without a result, a result without its call, a turn between a call and its result — what
    a crash, an abort or an edited history can leave — is repaired in the request, never sent
    as it is (the transcript keeps what happened). With
    ``ModelOptions(reasoning_retention="strip")`` earlier reasoning is left out of the
    request. Once untrusted tool output entered the run,
    the request's system prompt carries the inbound preamble (:func:`with_inbound_preamble`).
    """
    config = scope.config
    messages = scope.state.messages
    checked = scope.guard.check(messages)
    if checked.repairs:
        messages = checked.messages
    request_messages = (
        _without_reasoning(messages) if config.reasoning_retention == "strip" else list(messages)
    )
    if scope.state.untrusted_seen:
        request_messages = with_inbound_preamble(request_messages)
    return ModelRequest(
        messages=request_messages,
        tools=scope.current_tools().definitions(scope.state.promoted_tools),
        output=config.output_schema.spec if config.output_schema is not None else None,
        settings=config.model_settings,
    )


def with_inbound_preamble(messages: list[Message]) -> list[Message]:
    """The request's messages with the inbound preamble appended to the system prompt.

    The preamble goes at the end of the leading system message's text, after the pinned
    instructions, in a copy (the transcript keeps the instructions as they were). So the
    serialized request starts with the same bytes as every earlier step's, up to the end of
    the instructions, and providers that cache the prompt prefix keep their cache; the
    change happens once, when the first untrusted result arrives, and the text then stays
    the same for the rest of the run. A separate system message was not chosen because some
    wire protocols accept a single system prompt. Without instructions, the preamble becomes
    the system message.
    """
    if messages and isinstance(messages[0], SystemMessage):
        first = messages[0]
        return [replace(first, content=f"{first.content}\n\n{INBOUND_PREAMBLE}"), *messages[1:]]
    return [SystemMessage(content=INBOUND_PREAMBLE), *messages]


def _without_reasoning(messages: Sequence[Message]) -> list[Message]:
    stripped: list[Message] = []
    for message in messages:
        if isinstance(message, AssistantMessage) and any(
            isinstance(p, ReasoningPart) for p in message.parts
        ):
            parts = [p for p in message.parts if not isinstance(p, ReasoningPart)]
            stripped.append(replace(message, parts=parts))
        else:
            stripped.append(message)
    return stripped


def shape_output(scope: RunScope, request: ModelRequest, model: Model) -> None:
    """Ask for the agent's output type in the step's structured-output mode.

    The mode is the agent's ``output_mode``, else the one the step's model prefers
    (``Model.output_mode``, from its profile). ``native`` sends the schema as the request's
    output spec; ``prompted`` appends the schema to the system prompt (in a copy, the
    transcript keeps the instructions) and asks for JSON mode; ``tool`` advertises the
    final-answer tool and, unless the agent set a ``tool_choice``, requires a tool call.

    Raises:
        UserError: ``tool`` mode, and a tool of the step is named like the final-answer tool.
    """
    config = scope.config
    schema = config.output_schema
    assert schema is not None  # only called for agents with an output type
    mode = config.output_mode or model.output_mode
    scope.output_mode = mode
    if mode == "native":
        request.output = schema.spec
    elif mode == "prompted":
        request.output = schema.prompted_spec
        request.messages = _with_system_text(list(request.messages), schema.instructions)
    else:
        if any(d.name == OUTPUT_TOOL for d in request.tools):
            raise UserError(
                f"Agent {config.name!r} asks {model.key} for its output with the "
                f"{OUTPUT_TOOL!r} tool, but one of its tools has that name. Rename the tool "
                "or pass Output(T, mode='native') or mode='prompted'."
            )
        request.output = None
        request.tools = (*request.tools, schema.tool)
        if request.settings.tool_choice is None:
            request.settings = replace(request.settings, tool_choice="required")


def _with_system_text(messages: list[Message], text: str) -> list[Message]:
    """``messages`` with ``text`` appended to the leading system message (or as one)."""
    if messages and isinstance(messages[0], SystemMessage):
        first = messages[0]
        return [replace(first, content=f"{first.content}\n\n{text}"), *messages[1:]]
    return [SystemMessage(content=text), *messages]


async def before_llm_call(scope: RunScope, request: ModelRequest) -> None:
    """Let ``LoopHooks.before_llm_call`` replace the messages of this call only."""
    hooks = scope.config.loop_hooks
    assert hooks is not None  # only called when the hook is overridden
    messages = list(request.messages)
    replaced = await maybe_await(hooks.before_llm_call(scope.ctx, messages, scope.state.step))
    if replaced is not None:
        request.messages = list(replaced)


def result_keeper(scope: RunScope) -> ResultKeeper | None:
    """Where cleared tool results are kept for ``read_result`` (``None``: it is not offered)."""
    config = scope.config
    limiter = config.result_limiter
    if "read_result" not in scope.tools.by_name:
        return None
    run_id = scope.run_id

    async def keep(message: ToolMessage) -> str | None:
        try:
            return await limiter.spill.write(run_id, message.text)
        except OSError:  # not kept: the placeholder says the result was cleared
            return None

    return keep
