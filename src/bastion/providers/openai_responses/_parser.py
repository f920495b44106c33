"""Responses-API answers (SSE events, or one whole ``response`` object) → Bastion chunks.

Text and reasoning summaries stream as deltas; a function call is announced by
``response.output_item.added`` (its ``call_id`` and name), its arguments stream keyed by the
item id, and it ends with ``response.function_call_arguments.done`` or the item's
``response.output_item.done``. A finished reasoning item yields its ``id``, ``summary`` and
``encrypted_content`` as ``provider_details`` so the next request can send it back.

Every reasoning item stays its own part: the first chunk of an item carries the item's
``id``, which the assembler never merges into a part holding another id. A function call
remembers the reasoning item it followed (``after_reasoning``), so a reasoning → call →
reasoning → call answer goes back in that order. The stream must end with
``response.completed``, ``response.incomplete`` or ``response.failed``; a non-streamed answer
(``stream: false``) is the same ``response`` object, parsed by :meth:`ResponsesParser.whole`
through the same item handlers. Created by ``_protocol.ResponsesProtocol``.
"""

from __future__ import annotations

import json
from typing import cast

from bastion.core import (
    FinishChunk,
    FinishReason,
    JsonObject,
    JsonValue,
    MalformedResponse,
    ModelError,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    ToolCallDeltaChunk,
    ToolCallEndChunk,
    ToolCallStartChunk,
    Usage,
)
from bastion.providers._http import sse_json
from bastion.providers._names import ToolNameMap

from ._errors import stream_error
from ._wire import obj, opt_int, opt_list, opt_obj, opt_str, req_str

__all__ = ["ResponsesParser", "usage_of"]

_INCOMPLETE: dict[str, FinishReason] = {
    "max_output_tokens": "length",
    "content_filter": "content_filter",
}


class ResponsesParser:
    """Parses one streamed Responses-API answer (a :class:`~bastion.providers.StreamParser`)."""

    __slots__ = (
        "_call_ids",
        "_called",
        "_ended",
        "_finish",
        "_last_reasoning",
        "_names",
        "_response_id",
        "_streamed",
        "_summary_index",
        "_usage",
    )

    def __init__(self, names: ToolNameMap) -> None:
        self._names = names
        self._call_ids: dict[str, str] = {}  # function-call item id → call_id
        self._ended: set[str] = set()  # call_ids whose end was emitted
        self._streamed: set[str] = set()  # item ids that streamed deltas
        self._summary_index: dict[str, int] = {}  # reasoning item id → last summary index
        self._called = False
        self._finish: FinishReason | None = None
        self._usage = Usage()
        self._response_id: str | None = None
        self._last_reasoning: str | None = None  # the reasoning item seen last

    def whole(self, body: object) -> list[StreamChunk]:
        """A non-streamed answer (the ``response`` object) → its chunks, finish included.

        Raises:
            ModelError: The response failed, or it is malformed.
        """
        response = obj(body, "the response body")
        if opt_str(response, "status") == "failed":
            raise self._failure(opt_obj(response, "error") or {}, response)
        chunks: list[StreamChunk] = []
        for raw in opt_list(response, "output") or ():
            item = obj(raw, "an output item")
            chunks += self._item_added(item)
            chunks += self._item_done(item)
        self._terminal(response)
        return chunks + self.finish()

    def feed(self, item: object) -> list[StreamChunk]:
        """One SSE event → zero or more chunks.

        Raises:
            ModelError: The stream reported a failure, or the event is malformed.
        """
        if self._finish is not None:
            return []  # nothing counts after the terminal event
        data = obj(sse_json(item), "a stream event")
        kind = opt_str(data, "type") or getattr(item, "event", None)
        if kind in {"response.output_text.delta", "response.refusal.delta"}:
            return self._text(data)
        if kind in ("response.reasoning_summary_text.delta", "response.reasoning_text.delta"):
            return self._reasoning_delta(data)
        if kind == "response.output_item.added":
            return self._item_added(obj(data.get("item"), "'item'"))
        if kind == "response.function_call_arguments.delta":
            return self._arguments_delta(data)
        if kind == "response.function_call_arguments.done":
            return self._arguments_done(req_str(data, "item_id"), opt_str(data, "arguments"))
        if kind == "response.output_item.done":
            return self._item_done(obj(data.get("item"), "'item'"))
        if kind in ("response.completed", "response.incomplete"):
            return self._terminal(obj(data.get("response"), "'response'"))
        if kind == "response.failed":
            response = obj(data.get("response"), "'response'")
            raise self._failure(opt_obj(response, "error") or {}, data)
        if kind == "error":
            # The documented event has code/message at the top; some servers nest them.
            raise self._failure(opt_obj(data, "error") or data, data)
        return []  # lifecycle and content-part events carry nothing new

    def finish(self) -> list[StreamChunk]:
        """The stream ended: the closing :class:`FinishChunk`.

        Raises:
            MalformedResponse: The stream ended before a terminal event.
        """
        if self._finish is None:
            raise MalformedResponse(
                "The OpenAI Responses stream ended before 'response.completed' (truncated)."
            )
        finish = self._finish
        if finish == "stop" and self._called:
            finish = "tool_calls"
        details = {"response_id": self._response_id} if self._response_id else None
        return [FinishChunk(finish_reason=finish, usage=self._usage, provider_details=details)]

    def _text(self, data: JsonObject) -> list[StreamChunk]:
        delta = req_str(data, "delta")
        if item_id := opt_str(data, "item_id"):
            self._streamed.add(item_id)
        return [TextChunk(text=delta)] if delta else []

    def _reasoning_delta(self, data: JsonObject) -> list[StreamChunk]:
        delta = req_str(data, "delta")
        item_id = opt_str(data, "item_id") or ""
        index = opt_int(data, "summary_index")
        previous = self._summary_index.get(item_id)
        self._summary_index[item_id] = index
        if previous is not None and index != previous:
            delta = "\n\n" + delta  # a new summary part of the same item
        if not delta:
            return []
        if item_id in self._streamed:
            return [ReasoningChunk(text=delta)]
        # The item's first text: its id starts a part of its own (never merged into the
        # part of the reasoning item before it).
        self._streamed.add(item_id)
        self._last_reasoning = item_id or self._last_reasoning
        return [ReasoningChunk(text=delta, provider_details={"id": item_id} if item_id else None)]

    def _item_added(self, item: JsonObject) -> list[StreamChunk]:
        kind = opt_str(item, "type")
        if kind == "reasoning":
            self._last_reasoning = opt_str(item, "id") or self._last_reasoning
            return []
        if kind != "function_call":
            return []
        item_id = req_str(item, "id")
        call_id = req_str(item, "call_id")
        self._call_ids[item_id] = call_id
        self._called = True
        chunks: list[StreamChunk] = [
            ToolCallStartChunk(id=call_id, name=self._names.local(req_str(item, "name")))
        ]
        if arguments := opt_str(item, "arguments"):
            self._streamed.add(item_id)
            chunks.append(ToolCallDeltaChunk(id=call_id, arguments_delta=arguments))
        return chunks

    def _call_id(self, item_id: str) -> str:
        call_id = self._call_ids.get(item_id)
        if call_id is None:
            raise MalformedResponse(
                f"Function-call arguments for item {item_id!r} arrived before the item was added."
            )
        return call_id

    def _arguments_delta(self, data: JsonObject) -> list[StreamChunk]:
        item_id = req_str(data, "item_id")
        call_id = self._call_id(item_id)
        delta = req_str(data, "delta")
        self._streamed.add(item_id)
        return [ToolCallDeltaChunk(id=call_id, arguments_delta=delta)] if delta else []

    def _arguments_done(self, item_id: str, arguments: str | None) -> list[StreamChunk]:
        call_id = self._call_id(item_id)
        if call_id in self._ended:
            return []
        self._ended.add(call_id)
        chunks: list[StreamChunk] = []
        if arguments and item_id not in self._streamed:
            chunks.append(ToolCallDeltaChunk(id=call_id, arguments_delta=arguments))
        details = {"id": item_id}
        if self._last_reasoning is not None:
            details["after_reasoning"] = self._last_reasoning
        chunks.append(ToolCallEndChunk(id=call_id, provider_details=details))
        return chunks

    def _item_done(self, item: JsonObject) -> list[StreamChunk]:
        kind = opt_str(item, "type")
        if kind == "function_call":
            return self._arguments_done(req_str(item, "id"), opt_str(item, "arguments"))
        if kind == "reasoning":
            return [self._reasoning_done(item)]
        if kind == "message" and (item_id := opt_str(item, "id")) not in self._streamed:
            # The text was not streamed as deltas: take it from the finished item.
            self._streamed.add(item_id or "")
            text = "".join(_texts(opt_list(item, "content"), "output_text", "refusal"))
            return [TextChunk(text=text)] if text else []
        return []

    def _reasoning_done(self, item: JsonObject) -> ReasoningChunk:
        item_id = req_str(item, "id")
        self._last_reasoning = item_id
        summary = opt_list(item, "summary")
        details: JsonObject = {"id": item_id}
        if summary is not None:
            details["summary"] = cast("list[JsonValue]", summary)
        encrypted = opt_str(item, "encrypted_content")
        if encrypted is not None:
            details["encrypted_content"] = encrypted
        content = opt_list(item, "content")
        if content:
            # raw reasoning text (open-weight models)
            details["content"] = cast("list[JsonValue]", content)
        if item_id in self._streamed:
            text = ""
        else:
            self._streamed.add(item_id)
            texts = _texts(summary, "summary_text") or _texts(content, "reasoning_text")
            text = "\n\n".join(texts)
        return ReasoningChunk(text=text, provider_details=details)

    def _terminal(self, response: JsonObject) -> list[StreamChunk]:
        self._response_id = opt_str(response, "id")
        self._usage = usage_of(opt_obj(response, "usage"))
        if opt_str(response, "status") == "incomplete":
            details = opt_obj(response, "incomplete_details") or {}
            self._finish = _INCOMPLETE.get(opt_str(details, "reason") or "", "length")
        else:
            self._finish = "stop"
        return []

    @staticmethod
    def _failure(error: JsonObject, event: JsonObject) -> ModelError:
        return stream_error(error, json.dumps(event))


def usage_of(usage: JsonObject | None) -> Usage:
    """Bastion usage from a Responses ``usage`` object (cached and reasoning tokens included).

    A response without ``usage`` (some proxies drop it) counts as one request whose usage
    was not reported, so its zeros are not read as "free".

    Raises:
        MalformedResponse: A count is not an integer.
    """
    if usage is None:
        return Usage(requests=1, unreported_requests=1)
    return Usage(
        prompt_tokens=opt_int(usage, "input_tokens"),
        completion_tokens=opt_int(usage, "output_tokens"),
        cached_read_tokens=opt_int(_details(usage, "input_tokens_details"), "cached_tokens"),
        reasoning_tokens=opt_int(_details(usage, "output_tokens_details"), "reasoning_tokens"),
        requests=1,
    )


def _details(usage: JsonObject | None, key: str) -> JsonObject | None:
    return None if usage is None else opt_obj(usage, key)


def _texts(parts: list[object] | None, kind: str, refusal: str | None = None) -> list[str]:
    texts: list[str] = []
    for part in parts or ():
        fields = obj(part, "a content part")
        part_type = opt_str(fields, "type")
        if part_type == kind:
            texts.append(req_str(fields, "text"))
        elif refusal is not None and part_type == refusal:
            texts.append(req_str(fields, "refusal"))  # a refusal part holds its text there
    return texts
