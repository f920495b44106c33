"""Bastion request → OpenAI Chat Completions JSON body.

Called by :class:`~bastion.providers.openai.ChatCompletionsProtocol.payload`. Everything a
vendor would reject later (a part type Chat Completions cannot carry) is rejected here with
a :class:`~bastion.core.UserError`, before anything is sent.

Reasoning parts in the history are dropped: Chat Completions has no request field for them
(vLLM, DeepSeek and OpenRouter return reasoning but do not take it back), so reasoning is
not round-tripped over this protocol (SPEC G-63 applies to protocols that can carry it).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from bastion.core import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    Message,
    ModelRequest,
    ModelSettings,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolMessage,
    UserError,
    UserMessage,
)
from bastion.providers._names import ToolNameMap

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


def build_payload(request: ModelRequest, model: str, names: ToolNameMap) -> dict[str, Any]:
    """The JSON body of a streaming ``POST /chat/completions`` for ``request``.

    Raises:
        UserError: A message holds a part Chat Completions cannot carry.
    """
    body: dict[str, Any] = {
        "model": model,
        "messages": [_message(m, names) for m in request.messages],
        "stream": True,
        "stream_options": {"include_usage": True},
    }
    if request.tools:
        tools: list[dict[str, Any]] = []
        for tool in request.tools:
            function: dict[str, Any] = {
                "name": names.wire(tool.name),
                "description": tool.description,
                "parameters": tool.parameters,
            }
            if tool.strict:
                function["strict"] = True
            tools.append({"type": "function", "function": function})
        body["tools"] = tools
    if request.output is not None and request.output.mode == "prompted":
        body["response_format"] = {"type": "json_object"}  # the schema is in the prompt
    elif request.output is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": _SCHEMA_NAME.sub("_", request.output.name)[:64] or "output",
                "schema": request.output.json_schema,
                "strict": request.output.strict,
            },
        }
    _apply_settings(body, request.settings, names, has_tools=bool(request.tools))
    return body


def _apply_settings(
    body: dict[str, Any], settings: ModelSettings, names: ToolNameMap, *, has_tools: bool
) -> None:
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    if settings.max_tokens is not None:
        body["max_completion_tokens"] = settings.max_tokens
    if settings.stop is not None:
        body["stop"] = list(settings.stop)
    if settings.seed is not None:
        body["seed"] = settings.seed
    # OpenAI rejects tool_choice and parallel_tool_calls on a request without tools.
    if has_tools and settings.tool_choice is not None:
        choice = settings.tool_choice
        if choice in ("auto", "required", "none"):
            body["tool_choice"] = choice
        else:
            body["tool_choice"] = {"type": "function", "function": {"name": names.wire(choice)}}
    if has_tools and settings.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.extra:
        body.update(settings.extra)


def _message(message: Message, names: ToolNameMap) -> dict[str, Any]:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        out: dict[str, Any] = {"role": "user", "content": _user_content(message.content)}
        if message.name is not None:
            out["name"] = message.name
        return out
    if isinstance(message, AssistantMessage):
        return _assistant(message, names)
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


def _user_content(content: str | Sequence[object]) -> str | list[dict[str, Any]]:
    if isinstance(content, str):
        return content
    return [_user_part(part) for part in content]


def _user_part(part: object) -> dict[str, Any]:
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
        file: dict[str, Any] = {"file_data": f"data:{part.media_type};base64,{part.data}"}
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


def _assistant(message: AssistantMessage, names: ToolNameMap) -> dict[str, Any]:
    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif not isinstance(part, ReasoningPart):  # reasoning: no field for it (module doc)
            raise UserError(
                f"Chat Completions cannot send the assistant part {part!r} back; "
                "assistant messages carry text and tool calls only."
            )
    out: dict[str, Any] = {"role": "assistant", "content": "".join(texts) or None}
    if message.tool_calls:
        out["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": names.wire(call.name), "arguments": call.arguments},
            }
            for call in message.tool_calls
        ]
    elif out["content"] is None:
        out["content"] = ""
    return out


def _tool_content(message: ToolMessage) -> str | list[dict[str, Any]]:
    content = message.content
    if isinstance(content, str):
        return content
    parts: list[dict[str, Any]] = []
    for part in content:
        if not isinstance(part, TextPart):
            raise UserError(
                f"Chat Completions tool results take text only, got {part!r} in the result "
                f"of {message.tool_name!r}; return text (e.g. a URL or a description)."
            )
        parts.append({"type": "text", "text": part.text})
    return parts
