"""Request bodies for Ollama's ``/api/chat``: messages, tools, options, format.

Called by ``_protocol.OllamaChatProtocol.payload``. Ollama differs from OpenAI's chat format
in three ways that matter here: images are raw base64 strings in an ``images`` list (it
cannot fetch URLs), tool-call arguments are JSON objects rather than strings, and tool
results name the tool (``tool_name``) rather than a call id.
"""

from __future__ import annotations

from collections.abc import Sequence

from bastion.core import (
    AssistantMessage,
    ImagePart,
    JsonObject,
    Message,
    ModelRequest,
    ModelSettings,
    ReasoningConfig,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolDefinition,
    UserError,
    UserMessage,
    UserPart,
)
from bastion.providers._errors import as_object
from bastion.providers._names import ToolNameMap, chosen_tool
from bastion.providers._reasoning import accepted_effort, refuse_budget
from bastion.providers._request import SamplingKeys, object_arguments, sampling_fields

__all__ = ["build_payload"]

_SAMPLING = SamplingKeys(max_tokens="num_predict", stop="stop", seed="seed")


def build_payload(request: ModelRequest, model: str, names: ToolNameMap) -> JsonObject:
    """The JSON body of an ``/api/chat`` call for ``request``.

    The answer is streamed unless ``settings.stream`` is False (one whole JSON answer).

    ``settings.extra`` keys are merged into the body last (``{"think": True}``,
    ``{"keep_alive": "5m"}``); an ``options`` mapping in it is merged into the options, and
    ``reasoning_effort`` becomes Ollama's ``think``, as does ``settings.reasoning``.

    Raises:
        UserError: The conversation holds content Ollama cannot take (an image by URL,
            audio, a file).
    """
    settings = request.settings
    body: JsonObject = {
        "model": model,
        "messages": [_message(m, names) for m in request.messages],
    }
    tools = _tools(request.tools, settings, names)
    if tools:
        body["tools"] = tools
    options = sampling_fields(settings, _SAMPLING)
    if request.output is not None:
        prompted = request.output.mode == "prompted"  # the schema is in the prompt
        body["format"] = "json" if prompted else request.output.json_schema
    if settings.reasoning is not None:
        body["think"] = _think(settings.reasoning)
    extra = dict(settings.extra or {})
    effort = extra.pop("reasoning_effort", None)
    if effort is not None and "think" not in extra:
        # Ollama's spelling: think takes "low" / "medium" / "high" (or a boolean).
        extra["think"] = effort
    extra_options = as_object(extra.pop("options", None))
    if extra_options:
        options.update(extra_options)
    if options:
        body["options"] = options
    body.update(extra)
    body["stream"] = settings.stream is not False  # False: one whole JSON answer
    return body


def _think(config: ReasoningConfig) -> bool | str:
    """Ollama's ``think``: ``false`` for effort ``none``, else the level by name."""
    refuse_budget(config, "Ollama")
    effort = accepted_effort(config, "Ollama", ("none", "low", "medium", "high"))
    return False if effort == "none" else str(effort)


def _tools(
    tools: Sequence[ToolDefinition], settings: ModelSettings, names: ToolNameMap
) -> list[JsonObject]:
    # Ollama has no tool_choice: "none" withholds the tools, a tool name offers only that
    # tool; "auto" and "required" send them all.
    choice = settings.tool_choice
    if choice == "none":
        return []
    if choice not in (None, "auto", "required") and tools:
        tools = [chosen_tool(tools, choice)]
    return [
        {
            "type": "function",
            "function": {
                "name": names.wire(t.name),
                "description": t.description,
                "parameters": t.parameters,
            },
        }
        for t in tools
    ]


def _message(message: Message, names: ToolNameMap) -> JsonObject:
    if isinstance(message, SystemMessage):
        return {"role": "system", "content": message.content}
    if isinstance(message, UserMessage):
        return _with_parts({"role": "user"}, message.content)
    if isinstance(message, AssistantMessage):
        return _assistant(message, names)
    return _with_parts(
        {"role": "tool", "tool_name": names.wire(message.tool_name)}, message.content
    )


def _with_parts(out: JsonObject, content: str | list[UserPart]) -> JsonObject:
    if isinstance(content, str):
        out["content"] = content
        return out
    texts: list[str] = []
    images: list[str] = []
    for part in content:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ImagePart):
            images.append(_image_base64(part))
        else:
            raise UserError(
                f"Ollama's chat API takes text and images only, not a {part.type!r} part. "
                "Convert it to text, or use a provider that accepts it."
            )
    out["content"] = "".join(texts)
    if images:
        out["images"] = images
    return out


def _image_base64(part: ImagePart) -> str:
    if part.data is not None:
        return part.data
    url = part.url or ""
    if url.startswith("data:") and ";base64," in url:
        return url.partition(";base64,")[2]
    raise UserError(
        f"Ollama cannot fetch images by URL ({url[:100]!r}). Download the image and pass "
        "its bytes: ImagePart.from_bytes(data, media_type)."
    )


def _assistant(message: AssistantMessage, names: ToolNameMap) -> JsonObject:
    out: JsonObject = {
        "role": "assistant",
        "content": "".join(p.text for p in message.parts if isinstance(p, TextPart)),
    }
    thinking = "".join(p.text for p in message.parts if isinstance(p, ReasoningPart))
    if thinking:
        out["thinking"] = thinking
    if message.tool_calls:
        out["tool_calls"] = [_tool_call(c, names) for c in message.tool_calls]
    return out


def _tool_call(call: ToolCall, names: ToolNameMap) -> JsonObject:
    return {
        "function": {"name": names.wire(call.name), "arguments": object_arguments(call.arguments)}
    }
