"""Anthropic's Messages stream (server-sent events) → Bastion stream chunks.

Events arrive as ``message_start``, then per content block ``content_block_start``,
``content_block_delta``… and ``content_block_stop``, then ``message_delta`` (stop reason,
output tokens) and ``message_stop``; ``ping`` is a keep-alive and ``error`` a failure.
A ``redacted_thinking`` block has no text: it becomes a ``redacted`` reasoning chunk whose
``provider_details`` hold ``{"data": ...}`` (``_payload`` sends it back).
The forced output tool (see ``_payload``) streams as text. A non-streamed answer
(``"stream": false``) is the ``Message`` object the stream's events describe; :meth:`whole`
feeds its blocks through the same handlers, so both paths yield the same chunks. Usage is
cumulative across events; a message with no usage at all counts as unreported. Called by
``HttpModel`` through ``_protocol``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import cast

from bastion.core import (
    FinishChunk,
    FinishReason,
    JsonObject,
    MalformedResponse,
    Overloaded,
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
from bastion.providers._http import sse_json
from bastion.providers._names import ToolNameMap

from ._errors import error_fields, error_from_fields

__all__ = ["MessagesParser"]

_STOP_REASONS: dict[str, FinishReason] = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "pause_turn": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "refusal": "content_filter",
}


@dataclass(kw_only=True, slots=True)
class _Block:
    kind: str  # "text", "reasoning", "tool", "output" or "other"
    tool_id: str = ""
    initial_input: str = ""  # a tool_use block that arrives with its input already filled
    streamed: bool = False


class MessagesParser:
    """Parses one streamed Messages answer.

    Args:
        names: The request's tool-name map (wire names back to local names).
        output_tool: The wire name of the forced structured-output tool, if any.
    """

    __slots__ = (
        "_blocks",
        "_cache_read",
        "_cache_write",
        "_calls",
        "_done",
        "_input",
        "_message_id",
        "_names",
        "_output",
        "_output_tool",
        "_raw_usage",
        "_started",
        "_stop_reason",
    )

    def __init__(self, names: ToolNameMap, output_tool: str | None = None) -> None:
        self._names = names
        self._output_tool = output_tool
        self._blocks: dict[int, _Block] = {}
        self._started = False
        self._done = False
        self._calls = 0
        self._input = 0
        self._cache_read = 0
        self._cache_write = 0
        self._output = 0
        self._stop_reason: str | None = None
        self._message_id: str | None = None
        self._raw_usage: JsonObject | None = None  # the last usage object, as sent

    def whole(self, body: object) -> list[StreamChunk]:
        """A non-streamed ``Message`` body → the chunks its stream would have given.

        Raises:
            ModelError: The body is an error object (mapped from its type).
            MalformedResponse: The body is not a message.
        """
        message = _object(body, "the message body")
        if message.get("type") == "error":
            raise self._stream_error(message, json.dumps(message))
        self._message_start({"message": message})
        content = message.get("content")
        if not isinstance(content, list):
            raise MalformedResponse(f"Anthropic message has no content list: {content!r:.200}")
        chunks: list[StreamChunk] = []
        for index, raw in enumerate(cast("list[object]", content)):
            chunks += self._open_block(index, _object(raw, "a content block"))
            chunks += self._block_stop({"index": index})
        reason = message.get("stop_reason")
        self._stop_reason = reason if isinstance(reason, str) else None
        self._done = True
        return chunks + self.finish()

    def feed(self, item: object) -> list[StreamChunk]:
        """Turn one server-sent event into chunks.

        Raises:
            ModelError: The stream reported an error (mapped from its type).
            MalformedResponse: The event is not what the protocol allows here.
        """
        data = _object(sse_json(item), "event data")
        kind = data.get("type")
        if not isinstance(kind, str) and isinstance(item, SSEEvent):
            kind = item.event
        if kind == "ping":
            return []
        if kind == "error":
            raise self._stream_error(data, item)
        if kind == "message_start":
            return self._message_start(data)
        if not self._started:
            raise MalformedResponse(
                f"Anthropic stream sent {kind!r} before message_start.", body=_body(item)
            )
        if self._done:
            return []
        if kind == "content_block_start":
            return self._block_start(data)
        if kind == "content_block_delta":
            return self._block_delta(data)
        if kind == "content_block_stop":
            return self._block_stop(data)
        if kind == "message_delta":
            self._message_delta(data)
        elif kind == "message_stop":
            self._done = True
        return []  # unknown events are skipped: the API may add new ones

    def finish(self) -> list[StreamChunk]:
        """End of the stream: the finish chunk.

        Raises:
            MalformedResponse: The stream ended before ``message_stop``.
        """
        if not self._done:
            raise MalformedResponse(
                "Anthropic stream ended before message_stop (connection cut or truncated)."
            )
        raw = self._stop_reason
        reason: FinishReason = _STOP_REASONS.get(raw or "end_turn", "stop")
        if reason == "tool_calls" and self._calls == 0:
            reason = "stop"  # only the structured-output tool was called: that is the answer
        if self._raw_usage is None:
            usage = Usage(requests=1, unreported_requests=1)
        else:
            # input_tokens counts only what was neither read from nor written to the cache.
            usage = Usage(
                prompt_tokens=self._input + self._cache_read + self._cache_write,
                completion_tokens=self._output,
                cached_read_tokens=self._cache_read,
                cache_write_tokens=self._cache_write,
                requests=1,
                provider_metrics={"usage": self._raw_usage},
            )
        details: JsonObject = {"stop_reason": raw}
        if self._message_id is not None:
            details["id"] = self._message_id
        return [FinishChunk(finish_reason=reason, usage=usage, provider_details=details)]

    def _stream_error(self, data: JsonObject, item: object) -> Exception:
        kind, message = error_fields(data)
        body = item if isinstance(item, str) else _body(item)
        mapped = error_from_fields(kind, message, status=None, body=body, headers={})
        if mapped is not None:
            return mapped
        # A failure type this adapter does not know yet: the server's, so worth a retry.
        return Overloaded(
            f"Anthropic reported an error of unknown type {kind!r}: {message}",
            body=body,
            vendor_code=kind,
        )

    def _usage(self, usage: JsonObject) -> None:
        # Counts are cumulative: a later event repeats or raises an earlier count.
        self._raw_usage = {**(self._raw_usage or {}), **usage}
        self._input = _int(usage.get("input_tokens"), self._input)
        self._cache_read = _int(usage.get("cache_read_input_tokens"), self._cache_read)
        self._cache_write = _int(usage.get("cache_creation_input_tokens"), self._cache_write)
        self._output = _int(usage.get("output_tokens"), self._output)

    def _message_start(self, data: JsonObject) -> list[StreamChunk]:
        if self._started:
            raise MalformedResponse("Anthropic stream sent a second message_start.")
        self._started = True
        message = _object(data.get("message"), "message_start.message")
        message_id = message.get("id")
        self._message_id = message_id if isinstance(message_id, str) else None
        usage = as_object(message.get("usage"))
        if usage is not None:
            self._usage(usage)
        return []

    def _message_delta(self, data: JsonObject) -> None:
        delta = as_object(data.get("delta"))
        if delta is not None and isinstance(reason := delta.get("stop_reason"), str):
            self._stop_reason = reason
        usage = as_object(data.get("usage"))
        if usage is not None:
            self._usage(usage)

    def _block_start(self, data: JsonObject) -> list[StreamChunk]:
        index = _index(data)
        block = _object(data.get("content_block"), "content_block")
        return self._open_block(index, block)

    def _open_block(self, index: int, block: JsonObject) -> list[StreamChunk]:
        kind = block.get("type")
        if kind == "text":
            self._blocks[index] = _Block(kind="text")
            text = block.get("text")
            return [TextChunk(text=text)] if isinstance(text, str) and text else []
        if kind == "thinking":
            self._blocks[index] = _Block(kind="reasoning")
            text, signature = block.get("thinking"), block.get("signature")
            chunk = ReasoningChunk(
                text=text if isinstance(text, str) else "",
                signature=signature if isinstance(signature, str) and signature else None,
            )
            return [chunk] if chunk.text or chunk.signature else []
        if kind == "redacted_thinking":
            self._blocks[index] = _Block(kind="other")
            data_field = _string(block.get("data"), "redacted_thinking.data")
            return [ReasoningChunk(redacted=True, provider_details={"data": data_field})]
        if kind == "tool_use":
            call_id = _string(block.get("id"), "tool_use.id")
            name = _string(block.get("name"), "tool_use.name")
            initial = as_object(block.get("input"))
            entry = _Block(
                kind="output" if name == self._output_tool else "tool",
                tool_id=call_id,
                initial_input=json.dumps(initial) if initial else "",
            )
            self._blocks[index] = entry
            if entry.kind == "output":
                return []
            self._calls += 1
            return [ToolCallStartChunk(id=call_id, name=self._names.local(name))]
        self._blocks[index] = _Block(kind="other")  # server tools, citations: not mapped
        return []

    def _block_delta(self, data: JsonObject) -> list[StreamChunk]:
        block = self._block(data)
        delta = _object(data.get("delta"), "content_block_delta.delta")
        kind = delta.get("type")
        if kind == "text_delta" and block.kind == "text":
            return [TextChunk(text=_string(delta.get("text"), "text_delta.text"))]
        if kind == "thinking_delta" and block.kind == "reasoning":
            return [ReasoningChunk(text=_string(delta.get("thinking"), "thinking_delta"))]
        if kind == "signature_delta" and block.kind == "reasoning":
            signature = _string(delta.get("signature"), "signature_delta.signature")
            return [ReasoningChunk(signature=signature)]
        if kind == "input_json_delta" and block.kind in ("tool", "output"):
            partial = _string(delta.get("partial_json"), "input_json_delta.partial_json")
            if not partial:
                return []
            block.streamed = True
            if block.kind == "output":
                return [TextChunk(text=partial)]
            return [ToolCallDeltaChunk(id=block.tool_id, arguments_delta=partial)]
        if block.kind == "other" or kind not in _KNOWN_DELTAS:
            return []  # e.g. citations_delta: not mapped
        raise MalformedResponse(f"Anthropic stream sent a {kind!r} delta in a {block.kind} block.")

    def _block_stop(self, data: JsonObject) -> list[StreamChunk]:
        block = self._block(data)
        chunks: list[StreamChunk] = []
        if block.kind == "output":
            if not block.streamed:
                chunks.append(TextChunk(text=block.initial_input or "{}"))
        elif block.kind == "tool":
            if not block.streamed and block.initial_input:
                chunks.append(
                    ToolCallDeltaChunk(id=block.tool_id, arguments_delta=block.initial_input)
                )
            chunks.append(ToolCallEndChunk(id=block.tool_id))
        return chunks

    def _block(self, data: JsonObject) -> _Block:
        index = _index(data)
        block = self._blocks.get(index)
        if block is None:
            raise MalformedResponse(f"Anthropic stream referred to unknown content block {index}.")
        return block


_KNOWN_DELTAS = frozenset({"text_delta", "thinking_delta", "signature_delta", "input_json_delta"})


def _body(item: object) -> str | None:
    return item.data if isinstance(item, SSEEvent) else None


def _object(value: object, what: str) -> JsonObject:
    obj = as_object(value)
    if obj is None:
        raise MalformedResponse(f"Anthropic stream: {what} is not a JSON object: {value!r:.200}")
    return obj


def _string(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise MalformedResponse(f"Anthropic stream: {what} is not a string: {value!r:.200}")
    return value


def _index(data: JsonObject) -> int:
    index = data.get("index")
    if not isinstance(index, int) or isinstance(index, bool):
        raise MalformedResponse(f"Anthropic stream: block index is not an integer: {index!r}")
    return index


def _int(value: object, default: int) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) else default
