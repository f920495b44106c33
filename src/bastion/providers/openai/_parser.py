"""OpenAI Chat Completions answers → Bastion stream chunks, streamed or whole.

One :class:`ChatCompletionsParser` per answer, made by the protocol and fed by
``HttpModel``. A streamed answer arrives as SSE events whose ``data`` is a
``chat.completion.chunk`` JSON object or ``[DONE]``; a non-streamed one (``"stream":
false``) as one ``chat.completion`` JSON object, whose ``message`` is read exactly like a
delta, so both paths yield the same chunk sequence. Only choice 0 is read (Bastion never
asks for ``n > 1``). Raw JSON is narrowed field by field: a wrong type anywhere is a
:class:`~bastion.core.MalformedResponse`, never another exception.

Vendor shapes read here: reasoning as ``reasoning_content`` (DeepSeek, vLLM, llama.cpp) or
``reasoning`` (OpenRouter, Ollama, newer vLLM); OpenRouter's ``reasoning_details`` array,
kept byte-exact on the reasoning part for the next request; Mistral's ``content`` as a list
of typed ``thinking`` / ``text`` chunks; usage in ``usage`` or Groq's ``x_groq.usage``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import cast

from bastion.core import (
    FinishChunk,
    FinishReason,
    JsonObject,
    JsonValue,
    MalformedResponse,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    Usage,
)
from bastion.providers._errors import as_object
from bastion.providers._framing import SSEEvent
from bastion.providers._names import ToolNameMap

from ._errors import stream_error
from ._reasoning import ReasoningDetails

__all__ = ["ChatCompletionsParser", "usage_from"]

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


class ChatCompletionsParser:
    """Parses one Chat Completions answer, streamed or whole (a ``StreamParser``).

    Args:
        names: The request's tool-name map; wire names in tool calls are mapped back.
        vendor: Named in error messages.
    """

    __slots__ = ("_details", "_done", "_finish", "_names", "_open", "_usage", "_vendor")

    def __init__(self, names: ToolNameMap, *, vendor: str = "openai") -> None:
        self._names = names
        self._vendor = vendor
        self._open: dict[int, str] = {}  # choice tool-call index → call id
        self._finish: FinishReason | None = None
        self._usage: Usage | None = None
        self._done = False
        self._details: ReasoningDetails | None = None

    def feed(self, item: object) -> list[StreamChunk]:
        """One SSE event, or the whole JSON body of a non-streamed answer → chunks.

        Raises:
            ModelError: The vendor reported an error in the stream.
            MalformedResponse: The event is not a well-formed chunk.
        """
        if isinstance(item, SSEEvent):
            if self._done:
                return []  # nothing is defined after [DONE]
            if item.data[:1] != "{" and item.data.strip() == "[DONE]":
                self._done = True
                return []
            raw = item.data
            data = as_object(item.json())
        else:
            raw = json.dumps(item)
            data = as_object(item)
            self._done = True  # a whole answer is complete in itself
        if data is None:
            raise MalformedResponse(
                f"Expected a JSON object in the answer, got {raw[:200]!r}", body=raw
            )
        return self._data(data, raw)

    def finish(self) -> list[StreamChunk]:
        """Close open tool calls and return the single :class:`FinishChunk`.

        A server that reported no usage gets ``unreported_requests=1``: its zeros mean
        "not reported", not "free".

        Raises:
            MalformedResponse: The stream ended with neither ``[DONE]`` nor a finish reason.
        """
        if not self._done and self._finish is None:
            raise MalformedResponse(
                f"The {self._vendor} stream ended before it was complete "
                "(no finish_reason and no [DONE])."
            )
        chunks = self._flush_details()
        chunks.extend(self._close_calls())
        usage = self._usage or Usage(requests=1, unreported_requests=1)
        chunks.append(FinishChunk(finish_reason=self._finish or "stop", usage=usage))
        return chunks

    def _data(self, data: JsonObject, raw: str) -> list[StreamChunk]:
        if data.get("object") == "error" or data.get("error") is not None:
            error = data.get("error", data)  # vLLM puts the error fields at the top level
            fields = as_object(error)
            raise stream_error(
                fields if fields is not None else {"message": str(error)}, raw, vendor=self._vendor
            )
        usage = data.get("usage")
        if usage is None and "x_groq" in data:
            usage = (as_object(data["x_groq"]) or {}).get("usage")  # Groq's streamed usage
        if usage is not None:
            self._usage = usage_from(_object(usage, "usage", raw))
        choices = data.get("choices")
        if choices is None:
            return []
        if not isinstance(choices, list):
            raise MalformedResponse(f"'choices' is not a list: {raw[:200]!r}", body=raw)
        chunks: list[StreamChunk] = []
        for raw_choice in cast("list[object]", choices):
            choice = _object(raw_choice, "choice", raw)
            if choice.get("index", 0) == 0:
                self._choice(choice, raw, chunks)
        return chunks

    def _choice(self, choice: Mapping[str, JsonValue], raw: str, chunks: list[StreamChunk]) -> None:
        delta = choice.get("delta")
        if delta is None:
            delta = choice.get("message")  # a whole answer: the message reads like one delta
        if delta is not None:
            self._delta(_object(delta, "delta", raw), raw, chunks)
        reason = choice.get("finish_reason")
        if reason is not None:
            if not isinstance(reason, str):
                raise MalformedResponse(f"'finish_reason' is not a string: {raw[:200]!r}", body=raw)
            # Vendors add their own reasons ("eos", "end_turn"): an ordinary stop.
            self._finish = _FINISH.get(reason, "stop")
            chunks.extend(self._flush_details())
            chunks.extend(self._close_calls())

    def _delta(self, delta: Mapping[str, JsonValue], raw: str, chunks: list[StreamChunk]) -> None:
        content = delta.get("content")
        if len(delta) == 1 and type(content) is str:  # the common case: a piece of text
            if content:
                if self._details is not None:
                    chunks.extend(self._flush_details())
                chunks.append(TextChunk(text=content))
            return
        details = delta.get("reasoning_details")
        if details is not None:
            if self._details is None:
                self._details = ReasoningDetails()
            self._details.add(details, raw)
        # vLLM and DeepSeek send reasoning as `reasoning_content`, OpenRouter as `reasoning`.
        for key in ("reasoning_content", "reasoning"):
            reasoning = _text(delta.get(key), key, raw)
            if reasoning:
                chunks.append(ReasoningChunk(text=reasoning))
                break
        if isinstance(content, list):
            chunks.extend(self._typed_content(cast("list[object]", content), raw))
        else:
            text = _text(content, "content", raw)
            if text:
                chunks.extend(self._flush_details())
                chunks.append(TextChunk(text=text))
        refusal = _text(delta.get("refusal"), "refusal", raw)
        if refusal:
            chunks.append(TextChunk(text=refusal))
        calls = delta.get("tool_calls")
        if calls is None:
            return
        if not isinstance(calls, list):
            raise MalformedResponse(f"'tool_calls' is not a list: {raw[:200]!r}", body=raw)
        chunks.extend(self._flush_details())
        for position, raw_call in enumerate(cast("list[object]", calls)):
            self._tool_call(_object(raw_call, "tool call", raw), position, raw, chunks)

    def _typed_content(self, content: list[object], raw: str) -> list[StreamChunk]:
        """Mistral's list content: ``thinking`` chunks → reasoning, ``text`` chunks → text."""
        chunks: list[StreamChunk] = []
        for raw_part in content:
            part = _object(raw_part, "content chunk", raw)
            kind = part.get("type", "text")
            if kind == "text":
                text = _text(part.get("text"), "text", raw)
                if text:
                    chunks.extend(self._flush_details())
                    chunks.append(TextChunk(text=text))
            elif kind == "thinking":
                thinking = part.get("thinking")
                if isinstance(thinking, str):
                    pieces: list[object] = [{"type": "text", "text": thinking}]
                elif isinstance(thinking, list):
                    pieces = cast("list[object]", thinking)
                else:
                    raise MalformedResponse(
                        f"'thinking' is neither text nor a list: {raw[:200]!r}", body=raw
                    )
                for raw_piece in pieces:
                    piece = _object(raw_piece, "thinking chunk", raw)
                    text = _text(piece.get("text"), "text", raw)
                    if text:
                        chunks.append(ReasoningChunk(text=text))
            # Other chunk types (references, images) carry no answer text: skipped.
        return chunks

    def _flush_details(self) -> list[StreamChunk]:
        """The assembled ``reasoning_details``, attached to the reasoning they belong to.

        Emitted once, just before the first text or tool call that follows the reasoning
        (or at the end), so the assembler puts them on that reasoning part.
        """
        details = self._details
        if details is None:
            return []
        self._details = None
        return [ReasoningChunk(provider_details={"reasoning_details": details.entries()})]

    def _tool_call(
        self, call: Mapping[str, JsonValue], position: int, raw: str, chunks: list[StreamChunk]
    ) -> None:
        index = call.get("index", position)
        if not isinstance(index, int) or isinstance(index, bool):
            raise MalformedResponse(f"Tool call 'index' is not an integer: {raw[:200]!r}", body=raw)
        call_id = _text(call.get("id"), "id", raw)
        function = call.get("function")
        fields = _object(function, "function", raw) if function is not None else {}
        name = _text(fields.get("name"), "name", raw)
        arguments = _text(fields.get("arguments"), "arguments", raw)
        current = self._open.get(index)
        if current is not None and call_id and call_id != current:
            # Some compatible servers reuse index 0 for each parallel call: a new id is a new call.
            chunks.append(ToolCallEndChunk(id=self._open.pop(index)))
            current = None
        if current is None:
            if not name:
                raise MalformedResponse(
                    f"Tool call {index} starts without a function name: {raw[:200]!r}", body=raw
                )
            current = call_id or f"call_{index}"
            self._open[index] = current
            chunks.append(ToolCallStartChunk(id=current, name=self._names.local(name)))
        if arguments:
            chunks.append(ToolCallDeltaChunk(id=current, arguments_delta=arguments))

    def _close_calls(self) -> list[StreamChunk]:
        ended: list[StreamChunk] = [ToolCallEndChunk(id=self._open[i]) for i in sorted(self._open)]
        self._open.clear()
        return ended


def usage_from(raw: Mapping[str, JsonValue]) -> Usage:
    """A :class:`~bastion.core.Usage` from a Chat Completions ``usage`` object (one request).

    Reads OpenAI's details (cached, audio, reasoning), the cache writes compatible vendors
    report (``prompt_tokens_details.cache_write_tokens``, OpenRouter) and DeepSeek's
    ``prompt_cache_hit_tokens``.
    """
    prompt = _object_or_empty(raw.get("prompt_tokens_details"))
    completion = _object_or_empty(raw.get("completion_tokens_details"))
    cached = _int(prompt.get("cached_tokens"))
    if cached == 0:
        cached = _int(raw.get("prompt_cache_hit_tokens"))  # DeepSeek
    return Usage(
        prompt_tokens=_int(raw.get("prompt_tokens")),
        completion_tokens=_int(raw.get("completion_tokens")),
        reasoning_tokens=_int(completion.get("reasoning_tokens")),
        cached_read_tokens=cached,
        cache_write_tokens=_int(prompt.get("cache_write_tokens")),
        audio_input_tokens=_int(prompt.get("audio_tokens")),
        audio_output_tokens=_int(completion.get("audio_tokens")),
        requests=1,
        provider_metrics=dict(raw),
    )


def _object(value: object, what: str, raw: str) -> JsonObject:
    obj = as_object(value)
    if obj is None:
        raise MalformedResponse(f"Stream {what} is not a JSON object: {raw[:200]!r}", body=raw)
    return obj


def _object_or_empty(value: object) -> JsonObject:
    obj = as_object(value)
    return obj if obj is not None else {}


def _text(value: object, what: str, raw: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise MalformedResponse(f"Stream field {what!r} is not a string: {raw[:200]!r}", body=raw)
    return value


def _int(value: object) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0
