"""Bastion requests → the JSON body of Anthropic's Messages API (``POST /v1/messages``).

Owns the message mapping: leading system messages become the top-level ``system`` string,
tool results become ``tool_result`` blocks of a user turn, and consecutive turns of one role
are merged because the API requires alternating roles. Reasoning parts go back byte-exact
(``thinking`` with its signature, or ``redacted_thinking`` with its opaque data) before the
``tool_use`` blocks they led to.

Structured output: models with Anthropic's structured outputs get the
:class:`~bastion.core.OutputSpec` as ``output_config.format`` (a JSON schema, made strict by
``_schema``) and answer in plain JSON text. Other models (and schemas the grammar cannot
express) get it advertised as one more tool named after the spec, which the model is made
to call; ``_parser`` turns that call's input back into text. Prompt-cache breakpoints are
added by ``_cache``. Called by ``_protocol.MessagesProtocol.payload``.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Sequence
from dataclasses import replace
from typing import cast

from bastion.core import (
    AssistantMessage,
    FilePart,
    ImagePart,
    JsonObject,
    Message,
    ModelRequest,
    ModelSettings,
    OutputSpec,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolDefinition,
    ToolMessage,
    UserError,
    UserMessage,
    UserPart,
)
from bastion.providers._errors import as_object
from bastion.providers._names import ToolNameMap
from bastion.providers._request import SamplingKeys, object_arguments, sampling_fields
from bastion.providers._turns import EARLIER_NOT_SHOWN

from ._cache import PromptCache, apply_cache
from ._schema import strict_output_schema
from ._thinking import apply_reasoning

__all__ = ["DEFAULT_MAX_TOKENS", "OUTPUT_TOOL_DESCRIPTION", "build_payload", "native_format"]

_SAMPLING = SamplingKeys(stop="stop_sequences")

DEFAULT_MAX_TOKENS = 4096
OUTPUT_TOOL_DESCRIPTION = "Give the final answer by calling this tool with the answer as input."

Block = JsonObject


def native_format(output: OutputSpec) -> Block | None:
    """The ``output_config.format`` for ``output``, or None when its schema cannot be one."""
    schema = strict_output_schema(output.json_schema)
    return None if schema is None else {"type": "json_schema", "schema": schema}


def build_payload(
    request: ModelRequest,
    model: str,
    names: ToolNameMap,
    *,
    native_output: bool = False,
    cache: PromptCache | None = None,
) -> JsonObject:
    """The request body for ``request`` (streamed unless ``settings.stream`` is False).

    Args:
        request: What to send.
        model: The Anthropic model name.
        names: Local ↔ wire tool names (with the output tool's).
        native_output: Ask for structured output as ``output_config.format`` (models with
            structured outputs) instead of the forced output tool.
        cache: Prompt-cache breakpoints to add, if any.

    Raises:
        UserError: The conversation holds content this API cannot take (audio).
    """
    settings = request.settings
    system, messages = _conversation(request.messages, names)
    body: JsonObject = {
        "model": model,
        "max_tokens": settings.max_tokens or DEFAULT_MAX_TOKENS,
    }
    if system:
        body["system"] = system
    body["messages"] = messages
    tools: list[Block] = [_tool(t, names, structured=native_output) for t in request.tools]
    output = _output_tool(request)
    native = native_format(output) if output is not None and native_output else None
    if native is not None:
        body["output_config"] = {"format": native}
        request = replace(request, output=None)  # no output tool, no forced choice
        output = None
    if output is not None:
        tools.append(
            {
                "name": names.wire(output.name),
                "description": OUTPUT_TOOL_DESCRIPTION,
                "input_schema": output.json_schema,
            }
        )
    if tools:
        body["tools"] = tools
        choice = _tool_choice(request, names)
        if choice is not None:
            body["tool_choice"] = choice
    body.update(sampling_fields(settings, _SAMPLING))
    if settings.reasoning is not None:
        apply_reasoning(body, settings.reasoning)
    if cache is not None:
        apply_cache(body, cache)
    for key, value in (settings.extra or {}).items():
        ours = body.get(key)
        if isinstance(ours, dict) and isinstance(value, dict):
            # e.g. output_config: the caller's effort joins our format, not replaces it
            body[key] = {**ours, **value}
        else:
            body[key] = value
    body["stream"] = settings.stream is not False
    return body


def _tool(tool: ToolDefinition, names: ToolNameMap, *, structured: bool) -> Block:
    schema = tool.parameters
    strict = None
    if tool.strict and structured:
        # Strict tool use (models with structured outputs): the input is validated
        # against the schema, which must then fit the same grammar as output formats.
        strict = strict_output_schema(schema)
    block: Block = {
        "name": names.wire(tool.name),
        "description": tool.description,
        "input_schema": strict if strict is not None else schema,
    }
    if strict is not None:
        block["strict"] = True
    return block


def _output_tool(request: ModelRequest) -> OutputSpec | None:
    """The output spec sent as a forced tool; a prompted one is in the system prompt only."""
    output = request.output
    return output if output is not None and output.mode == "native" else None


def _thinking_enabled(settings: ModelSettings) -> bool:
    if settings.reasoning is not None and settings.reasoning.budget_tokens is not None:
        return True
    thinking = as_object((settings.extra or {}).get("thinking"))
    return thinking is not None and thinking.get("type") == "enabled"


def _tool_choice(request: ModelRequest, names: ToolNameMap) -> Block | None:
    settings = request.settings
    wanted = settings.tool_choice
    choice: Block | None
    output = _output_tool(request)
    if output is not None and wanted != "none":
        # Extended thinking rejects forced tool use; then the output tool is only offered.
        if _thinking_enabled(settings):
            choice = {"type": "auto"}
        elif request.tools:
            choice = {"type": "any"}  # a real tool or the answer, never bare text
        else:
            choice = {"type": "tool", "name": names.wire(output.name)}
    elif wanted is None:
        choice = None
    elif wanted == "auto":
        choice = {"type": "auto"}
    elif wanted == "required":
        choice = {"type": "any"}
    elif wanted == "none":
        choice = {"type": "none"}
    else:
        choice = {"type": "tool", "name": names.wire(wanted)}
    if settings.parallel_tool_calls is False and (choice is None or choice["type"] != "none"):
        choice = {**(choice or {"type": "auto"}), "disable_parallel_tool_use": True}
    return choice


def _conversation(messages: Sequence[Message], names: ToolNameMap) -> tuple[str, list[JsonObject]]:
    leading: list[str] = []
    turns: list[JsonObject] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            if not turns:
                leading.append(message.content)
                continue
            role, blocks = "user", [_text(message.content)]
        elif isinstance(message, UserMessage):
            role, blocks = "user", _user_blocks(message.content)
        elif isinstance(message, ToolMessage):
            role, blocks = "user", [_tool_result(message)]
        else:
            role, blocks = "assistant", _assistant_blocks(message, names)
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            cast("list[JsonObject]", turns[-1]["content"]).extend(blocks)
        else:
            turns.append({"role": role, "content": blocks})
    if turns and turns[0]["role"] != "user":  # the API opens with the user's turn
        turns.insert(0, {"role": "user", "content": [_text(EARLIER_NOT_SHOWN)]})
    return "\n\n".join(leading), turns


def _text(text: str) -> Block:
    return {"type": "text", "text": text}


def _user_blocks(content: str | Sequence[UserPart]) -> list[Block]:
    if isinstance(content, str):
        return [_text(content)] if content else []
    return [block for part in content if (block := _user_part(part)) is not None]


def _user_part(part: UserPart) -> Block | None:
    if isinstance(part, TextPart):
        return _text(part.text) if part.text else None
    if isinstance(part, ImagePart):
        return {"type": "image", "source": _source(part.data, part.url, part.media_type, "image")}
    if isinstance(part, FilePart):
        return _document(part)
    raise UserError(
        f"Anthropic's Messages API does not accept {part.type} input. Transcribe it first, "
        "or use a model of another provider."
    )


def _source(data: str | None, url: str | None, media_type: str | None, what: str) -> Block:
    if data is not None:
        if not media_type:
            raise UserError(f"An inline {what} needs a media_type (e.g. 'image/png'), got None.")
        return {"type": "base64", "media_type": media_type, "data": data}
    if url is not None:
        return {"type": "url", "url": url}
    raise UserError(f"An {what} part needs either data or url; both are None.")


def _document(part: FilePart) -> Block:
    if part.media_type == "text/plain" and part.data is not None:
        try:
            text = base64.b64decode(part.data, validate=True).decode("utf-8")
        except (binascii.Error, UnicodeDecodeError) as exc:
            raise UserError(
                f"A text/plain file part must hold base64 UTF-8 text: {part.filename!r}."
            ) from exc
        source: Block = {"type": "text", "media_type": "text/plain", "data": text}
    else:
        source = _source(part.data, part.url, part.media_type, "file")
    block: Block = {"type": "document", "source": source}
    if part.filename:
        block["title"] = part.filename
    return block


def _reasoning_block(part: ReasoningPart) -> Block | None:
    details = part.provider_details or {}
    if part.redacted or details.get("redacted") is True:
        data = details.get("data")
        return {"type": "redacted_thinking", "data": data} if isinstance(data, str) else None
    if part.signature is None:
        return None  # reasoning from another vendor: Anthropic rejects unsigned thinking
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def _assistant_blocks(message: AssistantMessage, names: ToolNameMap) -> list[Block]:
    blocks: list[Block] = []
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            block = _reasoning_block(part)
        elif isinstance(part, TextPart):
            block = _text(part.text) if part.text else None
        else:
            raise UserError(
                f"Anthropic's Messages API takes no {part.type} content in assistant turns; "
                "send it in a user message instead."
            )
        if block is not None:
            blocks.append(block)
    blocks.extend(
        {
            "type": "tool_use",
            "id": call.id,
            "name": names.wire(call.name),
            "input": object_arguments(call.arguments),
        }
        for call in message.tool_calls
    )
    return blocks


def _tool_result(message: ToolMessage) -> Block:
    raw = message.content
    content: str | list[Block] = raw if isinstance(raw, str) else _user_blocks(raw)
    return {
        "type": "tool_result",
        "tool_use_id": message.tool_call_id,
        "content": content,
        "is_error": message.is_error,
    }
