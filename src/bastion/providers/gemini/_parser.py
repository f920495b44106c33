"""Gemini's ``GenerateContentResponse`` objects → Bastion stream chunks.

Called by ``HttpModel`` through ``GeminiProtocol``: one :class:`GeminiStreamParser` per
answer, fed one SSE event at a time, or (``generateContent``, not streamed) the one whole
response through :meth:`GeminiStreamParser.whole`, which shares the same handling.

Gemini sends whole function calls (no argument deltas), each with its start, arguments
and end at once. A call keeps the ``id`` Gemini gave it (``provider_details["id"]`` says
it was the vendor's, so it is sent back with the result); a call without one gets a fresh
random id, unique across the steps of a run. A ``thoughtSignature`` on a thought
part rides on that part's :class:`ReasoningChunk`; on a function call it goes into the
call's ``provider_details``; on an answer part it becomes a text-less
:class:`ReasoningChunk` right after that part's text, so it can be put back on the same
part (see ``_payload``).

Usage: Gemini counts thinking tokens (``thoughtsTokenCount``) apart from
``candidatesTokenCount``; Bastion's ``completion_tokens`` includes reasoning (``Usage``
docstring), so the two are added. ``toolUsePromptTokenCount`` is added to the prompt, and
the ``AUDIO`` entries of the per-modality details are the audio counts. The last
``usageMetadata`` wins; the raw object is kept in ``provider_metrics``; an answer without
any is one request whose usage was not reported.
"""

from __future__ import annotations

import json
from typing import Required

from pydantic import TypeAdapter, ValidationError
from typing_extensions import TypedDict

from bastion.core import (
    ContentFiltered,
    FinishChunk,
    FinishReason,
    JsonObject,
    JsonValue,
    MalformedResponse,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    Usage,
    new_id,
)
from bastion.providers._chunks import whole_tool_call
from bastion.providers._errors import as_object
from bastion.providers._http import sse_json
from bastion.providers._names import ToolNameMap

from ._errors import error_from_body
from ._payload import SIGNATURE_KEY, VENDOR_MARK

__all__ = ["GeminiStreamParser"]

_FILTERED = frozenset(
    {
        "SAFETY",
        "RECITATION",
        "BLOCKLIST",
        "PROHIBITED_CONTENT",
        "SPII",
        "IMAGE_SAFETY",
    }
)


class _FunctionCall(TypedDict, total=False):
    name: Required[str]
    args: dict[str, object]  # opaque: sent on as JSON text
    id: str


class _Part(TypedDict, total=False):
    text: str
    thought: bool
    thoughtSignature: str
    functionCall: _FunctionCall


class _Content(TypedDict, total=False):
    parts: list[_Part]


class _Candidate(TypedDict, total=False):
    content: _Content
    finishReason: str


class _ModalityCount(TypedDict, total=False):
    modality: str
    tokenCount: int


class _UsageMetadata(TypedDict, total=False):
    promptTokenCount: int
    candidatesTokenCount: int
    thoughtsTokenCount: int
    cachedContentTokenCount: int
    toolUsePromptTokenCount: int
    promptTokensDetails: list[_ModalityCount]
    candidatesTokensDetails: list[_ModalityCount]


class _PromptFeedback(TypedDict, total=False):
    blockReason: str


class _Response(TypedDict, total=False):
    candidates: list[_Candidate]
    usageMetadata: _UsageMetadata
    promptFeedback: _PromptFeedback
    modelVersion: str
    responseId: str
    error: dict[str, object]  # read by error_from_body from the raw body


_RESPONSE = TypeAdapter(_Response)


class GeminiStreamParser:
    """Parses one streamed answer of ``streamGenerateContent``."""

    __slots__ = ("_calls", "_details", "_finish", "_names", "_usage")

    def __init__(self, names: ToolNameMap) -> None:
        self._names = names
        self._calls = 0
        self._finish: str | None = None
        self._usage: Usage | None = None
        self._details: JsonObject = {}

    def feed(self, item: object) -> list[StreamChunk]:
        """One SSE event → chunks.

        Raises:
            ModelError: The event is an error, a blocked prompt, or malformed.
        """
        return self._response(sse_json(item))

    def whole(self, body: object) -> list[StreamChunk]:
        """A non-streamed ``generateContent`` answer → its chunks, finish included.

        Raises:
            ModelError: The body is an error, a blocked prompt, or malformed.
        """
        return self._response(body) + self.finish()

    def _response(self, raw: object) -> list[StreamChunk]:
        try:
            data = _RESPONSE.validate_python(raw)
        except ValidationError as exc:
            text = json.dumps(raw)[:500]
            raise MalformedResponse(f"Unexpected Gemini stream event: {text}", body=text) from exc
        if "error" in data:
            raise error_from_body(200, json.dumps(raw), {})
        if (block := data.get("promptFeedback", {}).get("blockReason")) is not None:
            raise ContentFiltered(
                f"Gemini blocked the prompt: blockReason {block!r}.", vendor_code=block
            )
        for key, field in (("modelVersion", "model_version"), ("responseId", "response_id")):
            if (value := data.get(key)) is not None:
                self._details[field] = value
        if "usageMetadata" in data:
            raw_usage = (as_object(raw) or {}).get("usageMetadata")
            self._usage = _usage(data["usageMetadata"], raw_usage)
        chunks: list[StreamChunk] = []
        candidates = data.get("candidates") or []
        if candidates:
            candidate = candidates[0]
            for part in candidate.get("content", {}).get("parts", []):
                chunks.extend(self._part(part))
            if (reason := candidate.get("finishReason")) is not None:
                self._finish = reason
        return chunks

    def _part(self, part: _Part) -> list[StreamChunk]:
        signature = part.get(SIGNATURE_KEY)
        call = part.get("functionCall")
        if call is not None:
            self._calls += 1
            details: JsonObject = {}
            if signature is not None:
                details[SIGNATURE_KEY] = signature
            vendor_id = call.get("id")
            if vendor_id:
                call_id = details["id"] = vendor_id
            else:
                # Gemini gave none: an id unique across the run's steps, so results never
                # land on a call of an earlier step.
                call_id = new_id("call")
            arguments = json.dumps(call.get("args", {}))
            name = self._names.local(call["name"])
            return whole_tool_call(call_id, name, arguments, details=details or None)
        text = part.get("text", "")
        if part.get("thought"):
            return [
                ReasoningChunk(text=text, signature=signature, provider_details=dict(VENDOR_MARK))
            ]
        chunks: list[StreamChunk] = [TextChunk(text=text)] if text else []
        if signature is not None:
            chunks.append(ReasoningChunk(signature=signature, provider_details=dict(VENDOR_MARK)))
        return chunks

    def finish(self) -> list[StreamChunk]:
        """The stream ended: the :class:`FinishChunk`.

        Raises:
            MalformedResponse: No ``finishReason`` arrived (the stream was cut short).
        """
        if self._finish is None:
            raise MalformedResponse(
                "Gemini's stream ended before a finishReason: truncated answer."
            )
        usage = self._usage or Usage(requests=1, unreported_requests=1)
        return [
            FinishChunk(
                finish_reason=self._reason(self._finish),
                usage=usage,
                provider_details={**self._details, "finish_reason": self._finish},
            )
        ]

    def _reason(self, reason: str) -> FinishReason:
        if reason == "STOP":
            return "tool_calls" if self._calls else "stop"
        if reason == "MAX_TOKENS":
            return "length"
        if reason in _FILTERED:
            return "content_filter"
        return "error"  # OTHER, MALFORMED_FUNCTION_CALL, LANGUAGE, …: kept in provider_details


def _usage(usage: _UsageMetadata, raw: JsonValue) -> Usage:
    thoughts = usage.get("thoughtsTokenCount", 0)
    return Usage(
        prompt_tokens=usage.get("promptTokenCount", 0) + usage.get("toolUsePromptTokenCount", 0),
        completion_tokens=usage.get("candidatesTokenCount", 0) + thoughts,
        reasoning_tokens=thoughts,
        cached_read_tokens=usage.get("cachedContentTokenCount", 0),
        audio_input_tokens=_audio(usage.get("promptTokensDetails")),
        audio_output_tokens=_audio(usage.get("candidatesTokensDetails")),
        requests=1,
        provider_metrics={"usageMetadata": raw},
    )


def _audio(details: list[_ModalityCount] | None) -> int:
    return sum(d.get("tokenCount", 0) for d in details or () if d.get("modality") == "AUDIO")
