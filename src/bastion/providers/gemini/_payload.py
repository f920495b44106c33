"""Bastion messages and settings → the JSON body of Gemini's ``streamGenerateContent``.

Called by ``GeminiProtocol.payload``. The leading system messages become
``systemInstruction`` (a later one is a user turn in place, so the instruction stays a stable
prompt-cache prefix); user
and tool messages become ``user`` turns (consecutive tool results share one turn, since
Gemini matches ``functionResponse`` parts to calls by name and order); assistant messages
become ``model`` turns.

Function calls go back with the ``id`` Gemini gave them (and their results carry it as
``functionResponse.id``); ids Bastion made up for calls that had none stay local.
Thought signatures go back byte-exact on the part they came on: a reasoning part with text
is a ``thought`` part carrying its signature; a signature that arrived on an answer part
(a :class:`ReasoningPart` with a signature and no text, marked ``{"vendor": "gemini"}``) is
put back on the wire part before it (or the one after, when it came first); a tool call's
signature rides in ``ToolCall.provider_details["thoughtSignature"]``. Signatures from other
vendors are never sent.
"""

from __future__ import annotations

import mimetypes
from collections.abc import Sequence

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
    ReasoningConfig,
    ReasoningEffort,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolMessage,
    UserError,
    UserMessage,
    text_of,
)
from bastion.providers._names import ToolNameMap
from bastion.providers._reasoning import accepted_effort
from bastion.providers._request import SamplingKeys, object_arguments, sampling_fields
from bastion.providers._turns import EARLIER_NOT_SHOWN

from ._schema import gemini_schema

__all__ = ["SIGNATURE_KEY", "VENDOR_MARK", "build_payload"]

SIGNATURE_KEY = "thoughtSignature"
VENDOR_MARK: JsonObject = {"vendor": "gemini"}

_SAMPLING = SamplingKeys(
    top_p="topP", max_tokens="maxOutputTokens", stop="stopSequences", seed="seed"
)
_TOOL_CHOICE = {"auto": "AUTO", "required": "ANY", "none": "NONE"}
# thinkingLevel's names; none is sent as a zero thinkingBudget.
_EFFORTS: tuple[ReasoningEffort, ...] = ("none", "minimal", "low", "medium", "high")


def build_payload(request: ModelRequest, names: ToolNameMap) -> JsonObject:
    """The request body for ``request``, tool names mapped through ``names``."""
    body: JsonObject = {}
    # Only the leading system messages are the system instruction: a later one goes in
    # place as a user turn, so the instruction (a prompt-cache prefix) never changes.
    lead = next(
        (i for i, m in enumerate(request.messages) if not isinstance(m, SystemMessage)),
        len(request.messages),
    )
    system = [m.content for m in request.messages[:lead] if isinstance(m, SystemMessage)]
    if system:
        body["systemInstruction"] = {"parts": [{"text": text} for text in system]}
    body["contents"] = _contents(request.messages[lead:], names)
    if request.tools:
        body["tools"] = [
            {
                "functionDeclarations": [
                    {
                        "name": names.wire(t.name),
                        "description": t.description,
                        "parameters": gemini_schema(t.parameters),
                    }
                    for t in request.tools
                ]
            }
        ]
    settings = request.settings
    if (tool_config := _tool_config(settings, names)) is not None:
        body["toolConfig"] = tool_config
    config = sampling_fields(settings, _SAMPLING)
    if settings.reasoning is not None:
        config["thinkingConfig"] = _thinking(settings.reasoning)
    if request.output is not None:
        config["responseMimeType"] = "application/json"
        if request.output.mode == "native":  # prompted: the schema is in the prompt
            config["responseJsonSchema"] = request.output.json_schema
    if settings.extra:
        config.update(settings.extra)
    if config:
        body["generationConfig"] = config
    return body


def _vendor_id(call: ToolCall) -> str | None:
    """The call's id when Gemini gave it (not one Bastion made up)."""
    vendor = (call.provider_details or {}).get("id")
    return vendor if isinstance(vendor, str) and vendor == call.id else None


def _contents(messages: Sequence[Message], names: ToolNameMap) -> list[JsonObject]:
    contents: list[JsonObject] = []
    results: list[JsonObject] | None = None  # the open turn of consecutive tool results
    vendor_ids = {
        vendor
        for message in messages
        if isinstance(message, AssistantMessage)
        for call in message.tool_calls
        if (vendor := _vendor_id(call)) is not None
    }
    for message in messages:
        if isinstance(message, ToolMessage):
            if results is None:
                results = []
                contents.append({"role": "user", "parts": results})
            key = "error" if message.is_error else "result"
            response: JsonObject = {
                "name": names.wire(message.tool_name),
                "response": {key: text_of(message.content)},
            }
            if message.tool_call_id in vendor_ids:
                response = {"id": message.tool_call_id, **response}
            results.append({"functionResponse": response})
            continue
        results = None
        if isinstance(message, UserMessage):
            contents.append({"role": "user", "parts": _user_parts(message.content)})
        elif isinstance(message, SystemMessage):
            contents.append({"role": "user", "parts": [{"text": message.content}]})
        elif isinstance(message, AssistantMessage):
            contents.append({"role": "model", "parts": _model_parts(message, names)})
    return _alternating(contents)


def _alternating(contents: list[JsonObject]) -> list[JsonObject]:
    """Turns in the order Gemini requires: user first, then user and model in turn.

    Consecutive turns of one role are merged (tool results stay first in their turn), turns
    left without parts are dropped, and a conversation that would start with the model gets
    a short user turn first.
    """
    out: list[JsonObject] = []
    for content in contents:
        if not content["parts"]:
            continue
        if out and out[-1]["role"] == content["role"]:
            out[-1] = {"role": content["role"], "parts": [*_parts(out[-1]), *_parts(content)]}
        else:
            out.append(content)
    if out and out[0]["role"] != "user":
        out.insert(0, {"role": "user", "parts": [{"text": EARLIER_NOT_SHOWN}]})
    return out


def _parts(content: JsonObject) -> Sequence[JsonValue]:
    """The ``parts`` list of a turn built by :func:`_contents`."""
    parts = content["parts"]
    return parts if isinstance(parts, list) else ()


def _user_parts(
    content: str | Sequence[TextPart | ImagePart | AudioPart | FilePart],
) -> list[JsonObject]:
    if isinstance(content, str):
        return [{"text": content}]
    return [
        _media(part) if not isinstance(part, TextPart) else {"text": part.text} for part in content
    ]


def _media(part: ImagePart | AudioPart | FilePart) -> JsonObject:
    mime = part.media_type or (mimetypes.guess_type(part.url)[0] if part.url else None)
    if mime is None:
        raise UserError(
            f"Gemini needs the media type of every {part.type} part, got none for "
            f"url={part.url!r}; pass media_type='image/png' (or the right type)."
        )
    if part.data is not None:
        return {"inlineData": {"mimeType": mime, "data": part.data}}
    return {"fileData": {"mimeType": mime, "fileUri": part.url}}


def _model_parts(message: AssistantMessage, names: ToolNameMap) -> list[JsonObject]:
    parts: list[JsonObject] = []
    pending: str | None = None  # a signature that arrived before any part to carry it
    for part in message.parts:
        if isinstance(part, ReasoningPart):
            ours = (part.provider_details or {}).get("vendor") == "gemini"
            signature = part.signature if ours else None
            if part.text and not part.redacted:
                wire: JsonObject = {"text": part.text, "thought": True}
                if signature:
                    wire[SIGNATURE_KEY] = signature
                parts.append(wire)
            elif signature:
                if parts and SIGNATURE_KEY not in parts[-1]:
                    parts[-1][SIGNATURE_KEY] = signature
                else:
                    pending = signature
            continue
        wire = {"text": part.text} if isinstance(part, TextPart) else _media(part)
        if pending is not None:
            wire[SIGNATURE_KEY] = pending
            pending = None
        parts.append(wire)
    for call in message.tool_calls:
        function: JsonObject = {
            "name": names.wire(call.name),
            "args": object_arguments(call.arguments),
        }
        if (vendor := _vendor_id(call)) is not None:
            function = {"id": vendor, **function}
        wire = {"functionCall": function}
        signature = (call.provider_details or {}).get(SIGNATURE_KEY)
        if isinstance(signature, str):
            wire[SIGNATURE_KEY] = signature
        elif pending is not None:
            wire[SIGNATURE_KEY] = pending
            pending = None
        parts.append(wire)
    if pending is not None:
        parts.append({"text": "", SIGNATURE_KEY: pending})
    return parts


def _tool_config(settings: ModelSettings, names: ToolNameMap) -> JsonObject | None:
    choice = settings.tool_choice
    if choice is None:
        return None
    mode = _TOOL_CHOICE.get(choice)
    if mode is not None:
        return {"functionCallingConfig": {"mode": mode}}
    return {"functionCallingConfig": {"mode": "ANY", "allowedFunctionNames": [names.wire(choice)]}}


def _thinking(config: ReasoningConfig) -> JsonObject:
    """``thinkingConfig``: a budget as ``thinkingBudget``, a level as ``thinkingLevel``.

    Raises:
        UserError: Both are set (Gemini takes one or the other), or a level Gemini has no
            name for.
    """
    if config.budget_tokens is not None and config.effort is not None:
        raise UserError(
            "ReasoningConfig with both effort and budget_tokens cannot be sent to Gemini: "
            "it takes thinkingLevel or thinkingBudget, not both. Set one."
        )
    if config.budget_tokens is not None:
        return {"thinkingBudget": config.budget_tokens, "includeThoughts": True}
    effort = accepted_effort(config, "Gemini", _EFFORTS)
    if effort == "none":
        return {"thinkingBudget": 0}
    return {"thinkingLevel": effort, "includeThoughts": True}
