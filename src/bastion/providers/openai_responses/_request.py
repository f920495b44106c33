"""Bastion request → Responses-API JSON body (``POST /responses``).

Owns the mapping of messages to ``input`` items, of tools, settings and structured output.
Reasoning items come back from ``_parser`` with their ``id``, ``summary`` and
``encrypted_content`` in ``ReasoningPart.provider_details`` and are sent back unchanged, one
input item per output item, which is what lets a stateless (``store: false``) conversation
keep the model's reasoning. Function calls go back right after the reasoning item they
followed (``after_reasoning``), because the API rejects a reasoning item that is not
followed by the item it led to. Called by ``_protocol.ResponsesProtocol.payload``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import cast

from bastion.core import (
    AssistantMessage,
    FilePart,
    ImagePart,
    JsonObject,
    JsonValue,
    Message,
    ModelRequest,
    ModelSettings,
    ReasoningEffort,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
    UserPart,
    text_of,
)
from bastion.providers._names import ToolNameMap
from bastion.providers._reasoning import accepted_effort, refuse_budget
from bastion.providers._request import SamplingKeys, sampling_fields

__all__ = ["ENCRYPTED_REASONING", "build_payload", "input_items"]

_SAMPLING = SamplingKeys(max_tokens="max_output_tokens")

ENCRYPTED_REASONING = "reasoning.encrypted_content"
_EFFORTS: tuple[ReasoningEffort, ...] = ("none", "minimal", "low", "medium", "high", "xhigh")


def build_payload(
    request: ModelRequest, model: str, names: ToolNameMap, *, encrypted_reasoning: bool
) -> JsonObject:
    """The JSON body for ``request``.

    Args:
        request: What to send.
        model: The vendor's model name.
        names: Local ↔ wire tool names.
        encrypted_reasoning: Ask for reasoning items' ``encrypted_content`` (reasoning models
            only: other models reject the ``include``).

    Raises:
        UserError: A message holds content the Responses API cannot take (audio input).
    """
    body: JsonObject = {
        "model": model,
        "input": input_items(request.messages, names),
        "stream": request.settings.stream is not False,
        "store": False,
    }
    if encrypted_reasoning:
        body["include"] = [ENCRYPTED_REASONING]
    if request.tools:
        body["tools"] = [
            {
                "type": "function",
                "name": names.wire(t.name),
                "description": t.description,
                "parameters": t.parameters,
                "strict": t.strict,
            }
            for t in request.tools
        ]
    if request.output is not None:
        body["text"] = {
            "format": {
                "type": "json_schema",
                "name": request.output.name,
                "schema": request.output.json_schema,
                "strict": request.output.strict,
            }
        }
    _apply_settings(body, request.settings, names)
    return body


def _apply_settings(body: JsonObject, settings: ModelSettings, names: ToolNameMap) -> None:
    # The Responses API has no ``stop`` or ``seed`` parameter: they are left out.
    body.update(sampling_fields(settings, _SAMPLING))
    if settings.parallel_tool_calls is not None:
        body["parallel_tool_calls"] = settings.parallel_tool_calls
    if settings.reasoning is not None:
        refuse_budget(settings.reasoning, "the Responses API")
        effort = accepted_effort(settings.reasoning, "the Responses API", _EFFORTS)
        body["reasoning"] = {"effort": effort}
    choice = settings.tool_choice
    if choice is not None:
        if choice in ("auto", "required", "none"):
            body["tool_choice"] = choice
        else:
            body["tool_choice"] = {"type": "function", "name": names.wire(choice)}
    for key, value in (settings.extra or {}).items():
        if key == "include" and isinstance(value, list):
            # Merged, so asking for more includes keeps the encrypted reasoning.
            ours = cast("list[JsonValue]", body.get("include", []))
            body["include"] = list(dict.fromkeys([*ours, *cast("list[JsonValue]", value)]))
        else:
            body[key] = value


def input_items(messages: Sequence[Message], names: ToolNameMap) -> list[JsonObject]:
    """The ``input`` items for a conversation, in order.

    Raises:
        UserError: A message holds content the Responses API cannot take.
    """
    items: list[JsonObject] = []
    for message in messages:
        if isinstance(message, SystemMessage):
            items.append({"role": "system", "content": message.content})
        elif isinstance(message, UserMessage):
            items.append({"role": "user", "content": _user_content(message.content)})
        elif isinstance(message, AssistantMessage):
            items.extend(_assistant_items(message, names))
        else:
            items.append(_tool_output(message))
    return items


def _user_content(content: str | list[UserPart]) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"type": "input_text", "text": content}]
    return [_user_part(part) for part in content]


def _user_part(part: UserPart) -> JsonObject:
    if isinstance(part, TextPart):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, ImagePart):
        return {"type": "input_image", "image_url": _url_of(part, "image/png")}
    if isinstance(part, FilePart):
        if part.data is None:
            return {"type": "input_file", "file_url": part.url}
        item: JsonObject = {"type": "input_file", "file_data": _url_of(part, part.media_type)}
        item["filename"] = part.filename or "document"
        return item
    raise UserError(
        "The OpenAI Responses API does not take audio input. Transcribe it first, or use the "
        "'openai:' (Chat Completions) provider with an audio-capable model."
    )


def _url_of(part: ImagePart | FilePart, default_type: str) -> str:
    if part.data is None:
        if part.url is None:
            raise UserError(f"{type(part).__name__} has neither data nor url; give one of them.")
        return part.url
    return f"data:{part.media_type or default_type};base64,{part.data}"


def _assistant_items(message: AssistantMessage, names: ToolNameMap) -> list[JsonObject]:
    reasoning = [
        (part, item)
        for part in message.parts
        if isinstance(part, ReasoningPart) and (item := _reasoning_item(part)) is not None
    ]
    order = {item["id"]: k for k, (_, item) in enumerate(reasoning)}
    by_part = {id(part): (k, item) for k, (part, item) in enumerate(reasoning)}
    # Each call waits until the reasoning item after the one it followed is about to go out.
    pending = [(order.get(_after(call), -1), call) for call in message.tool_calls]
    items: list[JsonObject] = []
    texts: list[JsonObject] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append({"type": "output_text", "text": part.text})
            continue
        if texts:
            items.append({"role": "assistant", "content": texts})
            texts = []
        if (entry := by_part.get(id(part))) is not None:
            index, item = entry
            items.extend(_function_call(call, names) for at, call in pending if at < index)
            pending = [(at, call) for at, call in pending if at >= index]
            items.append(item)
        # Other parts (images an assistant produced, reasoning of other vendors) have no
        # Responses input form; they are left out.
    if texts:
        items.append({"role": "assistant", "content": texts})
    items.extend(_function_call(call, names) for _, call in pending)
    while items and items[-1].get("type") == "reasoning":
        # The API rejects a reasoning item that nothing of its answer follows.
        items.pop()
    return items


def _after(call: ToolCall) -> str | None:
    after = (call.provider_details or {}).get("after_reasoning")
    return after if isinstance(after, str) else None


def _reasoning_item(part: ReasoningPart) -> JsonObject | None:
    details = part.provider_details or {}
    item_id = details.get("id")
    if not isinstance(item_id, str) or not item_id.startswith("rs_"):
        return None  # not an OpenAI reasoning item: the API would reject it
    summary = details.get("summary")
    if not isinstance(summary, list):
        summary = [{"type": "summary_text", "text": part.text}] if part.text else []
    item: JsonObject = {"type": "reasoning", "id": item_id, "summary": summary}
    encrypted = details.get("encrypted_content")
    if isinstance(encrypted, str):
        item["encrypted_content"] = encrypted
    content = details.get("content")
    if isinstance(content, list):
        item["content"] = content
    return item


def _function_call(call: ToolCall, names: ToolNameMap) -> JsonObject:
    item: JsonObject = {
        "type": "function_call",
        "call_id": call.id,
        "name": names.wire(call.name),
        "arguments": call.arguments,
    }
    item_id = (call.provider_details or {}).get("id")
    if isinstance(item_id, str) and item_id.startswith("fc_"):
        item["id"] = item_id
    return item


def _tool_output(message: ToolMessage) -> JsonObject:
    # Only text is sent: non-text parts of a tool result have no place in a string output.
    return {
        "type": "function_call_output",
        "call_id": message.tool_call_id,
        "output": text_of(message.content),
    }
