"""Bastion request → OpenAI Chat Completions JSON body, shaped by the server's profile.

Called by :class:`~bastion.providers.openai.ChatCompletionsProtocol.payload`. Everything a
vendor would reject later (a part type Chat Completions cannot carry, a ``tool_choice``
naming a tool the request does not offer) is rejected here with a
:class:`~bastion.core.UserError`, before anything is sent.

Which fields go out and how they are spelled comes from a :class:`ChatParams` profile
(``_vendors``), never from the vendor's name. Reasoning parts in the history go back the
way the profile says (``reasoning_content`` text, OpenRouter's opaque ``reasoning_details``
array, Mistral's typed thinking chunks) or not at all: Chat Completions itself has no
field for them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import cast

from bastion.core import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    JsonObject,
    JsonValue,
    Message,
    ModelRequest,
    ModelSettings,
    OutputSpec,
    ReasoningConfig,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolDefinition,
    ToolMessage,
    UserError,
    UserMessage,
)
from bastion.providers._errors import as_object
from bastion.providers._names import ToolNameMap, chosen_tool
from bastion.providers._reasoning import accepted_effort, refuse_budget

from ._vendors import OPENAI, ChatParams, ReasoningEcho

__all__ = ["build_payload", "tool_names"]

_SCHEMA_NAME = re.compile(r"[^a-zA-Z0-9_-]")
_AUDIO_FORMATS = {
    "audio/wav": "wav",
    "audio/x-wav": "wav",
    "audio/wave": "wav",
    "audio/mpeg": "mp3",
    "audio/mp3": "mp3",
}


def tool_names(request: ModelRequest) -> ToolNameMap:
    """The wire-name map for the request's tools and for tool calls in its history."""
    names = dict.fromkeys(tool.name for tool in request.tools)
    for message in request.messages:
        if isinstance(message, AssistantMessage):
            names.update(dict.fromkeys(call.name for call in message.tool_calls))
        elif isinstance(message, ToolMessage):
            names[message.tool_name] = None
    return ToolNameMap(names)


def build_payload(
    request: ModelRequest, model: str, names: ToolNameMap, params: ChatParams = OPENAI
) -> JsonObject:
    """The JSON body of ``POST /chat/completions`` for ``request``, as ``params`` spells it.

    ``settings.stream=False`` asks for one whole JSON answer (``"stream": false``).

    Raises:
        UserError: A message holds a part Chat Completions cannot carry, or
            ``tool_choice`` names a tool the request does not offer.
    """
    settings = request.settings
    streaming = settings.stream is not False
    messages = [_message(m, names, params) for m in request.messages]
    body: JsonObject = {"model": model, "messages": messages, "stream": streaming}
    if streaming and params.stream_usage:
        body["stream_options"] = {"include_usage": True}
    tools = _offered_tools(request, names, params, body)
    if tools:
        body["tools"] = [_tool(tool, names) for tool in tools]
    if request.output is not None:
        _output_format(body, request.output, params)
    _apply_settings(body, settings, params, has_tools=bool(tools))
    return body


def _tool(tool: ToolDefinition, names: ToolNameMap) -> JsonObject:
    function: JsonObject = {
        "name": names.wire(tool.name),
        "description": tool.description,
        "parameters": tool.parameters,
    }
    if tool.strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _offered_tools(
    request: ModelRequest, names: ToolNameMap, params: ChatParams, body: JsonObject
) -> Sequence[ToolDefinition]:
    """The tools to send, setting ``tool_choice`` in the form the server accepts."""
    tools = request.tools
    choice = request.settings.tool_choice
    # OpenAI rejects tool_choice on a request without tools: leave it out then.
    if choice is None or not tools:
        return tools
    accepted = params.tool_choice
    if choice in ("auto", "required", "none"):
        if choice in accepted:
            body["tool_choice"] = choice
        elif choice == "none":
            return ()  # the server cannot be told: do not offer the tools at all
        return tools
    chosen = [chosen_tool(tools, choice)]
    if "named" in accepted:
        body["tool_choice"] = {"type": "function", "function": {"name": names.wire(choice)}}
        return tools
    # The server ignores a named choice: offer that tool alone and require a call.
    if "required" in accepted:
        body["tool_choice"] = "required"
    return chosen


def _output_format(body: JsonObject, output: OutputSpec, params: ChatParams) -> None:
    if output.mode == "prompted":  # the schema is in the system prompt already
        body["response_format"] = {"type": "json_object"}
        return
    if params.json_schema:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": _SCHEMA_NAME.sub("_", output.name)[:64] or "output",
                "schema": output.json_schema,
                "strict": output.strict,
            },
        }
        return
    # JSON mode: the server checks only that the answer is JSON (and some require the
    # word "JSON" in the prompt), so the schema goes in a system message.
    body["response_format"] = {"type": "json_object"}
    schema = json.dumps(output.json_schema, separators=(",", ":"))
    cast("list[JsonObject]", body["messages"]).append(
        {
            "role": "system",
            "content": f"Answer with one JSON object that matches this JSON schema: {schema}",
        }
    )


def _apply_settings(
    body: JsonObject, settings: ModelSettings, params: ChatParams, *, has_tools: bool
) -> None:
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.max_tokens is not None:
        body[params.max_tokens] = settings.max_tokens
    if settings.stop is not None:
        body["stop"] = list(settings.stop)
    if settings.seed is not None and params.seed is not None:
        body[params.seed] = settings.seed
    if has_tools and settings.parallel_tool_calls is not None and params.parallel_tool_calls:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.reasoning is not None:
        _reasoning(body, settings.reasoning, params)
    if settings.extra:
        extra = dict(settings.extra)
        effort = extra.pop("reasoning_effort", None)
        if effort is not None:
            if params.reasoning_effort == "reasoning.effort":
                reasoning = as_object(extra.get("reasoning")) or {}
                extra["reasoning"] = {**reasoning, "effort": effort}
            else:
                body["reasoning_effort"] = effort
        body.update(extra)


def _reasoning(body: JsonObject, config: ReasoningConfig, params: ChatParams) -> None:
    """Send ``config`` in the fields ``params`` names (``extra`` may still override them)."""
    effort = accepted_effort(config, "this Chat Completions server", params.reasoning_efforts)
    nested: JsonObject = {}
    if config.budget_tokens is not None:
        if not params.reasoning_budget:
            refuse_budget(config, "this Chat Completions server")
        nested["max_tokens"] = config.budget_tokens
    if params.thinking_toggle and effort is not None:
        body["thinking"] = {"type": "disabled" if effort == "none" else "enabled"}
        effort = None if effort == "none" else effort
    if effort is not None and params.reasoning_effort == "reasoning.effort":
        nested["effort"] = effort
    elif effort is not None:
        body["reasoning_effort"] = effort
    if nested:
        body["reasoning"] = nested


def _message(message: Message, names: ToolNameMap, params: ChatParams) -> JsonObject:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        out: JsonObject = {"role": "user", "content": _user_content(message.content)}
        if message.name is not None and params.message_name:
            out["name"] = message.name
        return out
    if isinstance(message, AssistantMessage):
        return _assistant(message, names, params)
    if isinstance(message, ToolMessage):
        return {
            "role": "tool",
            "tool_call_id": message.tool_call_id,
            "content": _tool_content(message),
        }
    raise UserError(
        f"Cannot send message {message!r} to Chat Completions: expected a SystemMessage, "
        "UserMessage, AssistantMessage or ToolMessage."
    )


def _user_content(content: str | Sequence[object]) -> str | list[JsonObject]:
    if isinstance(content, str):
        return content
    return [_user_part(part) for part in content]


def _user_part(part: object) -> JsonObject:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text}
    if isinstance(part, ImagePart):
        if part.url is not None:
            url = part.url
        elif part.data is not None:
            url = f"data:{part.media_type or 'image/png'};base64,{part.data}"
        else:
            raise UserError("ImagePart has neither 'data' nor 'url'; give one of them.")
        return {"type": "image_url", "image_url": {"url": url}}
    if isinstance(part, AudioPart):
        return {"type": "input_audio", "input_audio": _audio(part)}
    if isinstance(part, FilePart):
        if part.data is None:
            raise UserError(
                f"Chat Completions takes files inline only, got FilePart(url={part.url!r}); "
                "pass the bytes with FilePart.from_bytes()."
            )
        file: JsonObject = {"file_data": f"data:{part.media_type};base64,{part.data}"}
        if part.filename is not None:
            file = {"filename": part.filename, **file}
        return {"type": "file", "file": file}
    raise UserError(
        f"Chat Completions cannot take the user part {part!r}; "
        "use TextPart, ImagePart, AudioPart or FilePart."
    )


def _audio(part: AudioPart) -> dict[str, str]:
    if part.data is None:
        raise UserError(
            f"Chat Completions takes audio inline only, got AudioPart(url={part.url!r}); "
            "pass the bytes with AudioPart.from_bytes()."
        )
    media = (part.media_type or "").lower()
    audio_format = _AUDIO_FORMATS.get(media)
    if audio_format is None:
        known = ", ".join(repr(m) for m in _AUDIO_FORMATS)
        raise UserError(
            f"Chat Completions audio must be wav or mp3, got media_type {part.media_type!r}. "
            f"Supported: {known}."
        )
    return {"data": part.data, "format": audio_format}


def _assistant(message: AssistantMessage, names: ToolNameMap, params: ChatParams) -> JsonObject:
    texts: list[str] = []
    reasoning: list[ReasoningPart] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ReasoningPart):
            reasoning.append(part)
        else:
            raise UserError(
                f"Chat Completions cannot send the assistant part {part!r} back; "
                "assistant messages carry text and tool calls only."
            )
    text = "".join(texts)
    out: JsonObject = {"role": "assistant"}
    if text or not message.tool_calls:
        out["content"] = text
    elif params.tool_call_content != "omit":
        out["content"] = "" if params.tool_call_content == "empty" else None
    if reasoning:
        _echo_reasoning(out, reasoning, text, params.reasoning_echo)
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": names.wire(call.name), "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    return out


def _echo_reasoning(
    out: JsonObject, parts: list[ReasoningPart], text: str, echo: ReasoningEcho
) -> None:
    """Put earlier reasoning back on an assistant message, in the server's own field."""
    thinking = "".join(part.text for part in parts)
    if echo == "reasoning_content":
        if thinking:
            out["reasoning_content"] = thinking
    elif echo == "reasoning_details":
        details: list[JsonValue] = []
        for part in parts:
            kept = (part.provider_details or {}).get("reasoning_details")
            if isinstance(kept, list):
                details.extend(cast("list[JsonValue]", kept))
        if details:
            out["reasoning_details"] = details
    elif echo == "mistral" and thinking:
        chunks: list[JsonObject] = [
            {"type": "thinking", "thinking": [{"type": "text", "text": thinking}]}
        ]
        if text:
            chunks.append({"type": "text", "text": text})
        out["content"] = chunks


def _tool_content(message: ToolMessage) -> str | list[JsonObject]:
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[JsonObject] = []
    for part in content:
        if not isinstance(part, TextPart):
            raise UserError(
                f"Chat Completions tool results take text only, got {part!r} in the result "
                f"of {message.tool_name!r}; return text (e.g. a URL or a description)."
            )
        parts.append({"type": "text", "text": part.text})
    return parts
