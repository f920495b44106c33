"""Parse Ollama's ``/api/chat`` NDJSON stream into stream chunks.

Called by ``HttpModel`` through ``OllamaChatProtocol.parser``. Each line is one JSON object
with a ``message`` (``content``, ``thinking``, ``tool_calls``); the last line has
``"done": true`` with the token counts and durations. A non-streamed answer
(``"stream": false``) is that final line alone, message included, so it parses the same.
Ollama sends whole tool calls (not argument deltas) and no call ids, so ids are made here.
"""

from __future__ import annotations

import hashlib
import json
from typing import cast

from bastion.core import (
    FinishChunk,
    FinishReason,
    JsonObject,
    MalformedResponse,
    ReasoningChunk,
    StreamChunk,
    TextChunk,
    Usage,
)
from bastion.providers._chunks import whole_tool_call
from bastion.providers._errors import as_object
from bastion.providers._names import ToolNameMap

from ._errors import stream_error

__all__ = ["OllamaStreamParser"]

_METRICS = (
    "total_duration",
    "load_duration",
    "prompt_eval_count",
    "prompt_eval_duration",
    "eval_count",
    "eval_duration",
)


class OllamaStreamParser:
    """Turns the JSON values of one ``/api/chat`` stream into chunks."""

    __slots__ = ("_calls", "_done", "_names")

    def __init__(self, names: ToolNameMap) -> None:
        self._names = names
        self._calls = 0
        self._done: JsonObject | None = None

    def feed(self, item: object) -> list[StreamChunk]:
        """One stream line's JSON value → chunks.

        Raises:
            ModelError: The line is an ``{"error": ...}`` report (mapped), or malformed.
        """
        line = as_object(item)
        if line is None:
            raise MalformedResponse(f"Ollama stream line is not a JSON object: {item!r:.200}")
        if "error" in line:
            raise stream_error(line["error"], json.dumps(line), status=_status_of(line))
        if self._done is not None:
            raise MalformedResponse(
                f"Ollama stream went on after its final line: {line!r:.200}", body=json.dumps(line)
            )
        chunks = self._message(line)
        if line.get("done") is True:
            self._done = line
        return chunks

    def finish(self) -> list[StreamChunk]:
        """The stream ended: the finish chunk with usage from the ``done`` line.

        Raises:
            MalformedResponse: The stream ended without its ``"done": true`` line.
        """
        done = self._done
        if done is None:
            raise MalformedResponse(
                'Ollama\'s stream ended before its final line (no "done": true); '
                "the answer is truncated."
            )
        reason = done.get("done_reason")
        finish: FinishReason = "length" if reason == "length" else "stop"
        if self._calls and finish == "stop":
            finish = "tool_calls"
        metrics = {k: done[k] for k in _METRICS if isinstance(done.get(k), int)}
        reported = "prompt_eval_count" in done or "eval_count" in done
        usage = Usage(
            prompt_tokens=_count(done, "prompt_eval_count"),
            completion_tokens=_count(done, "eval_count"),
            requests=1,
            unreported_requests=0 if reported else 1,
            provider_metrics=metrics or None,
        )
        details = {"done_reason": reason} if isinstance(reason, str) else None
        return [FinishChunk(finish_reason=finish, usage=usage, provider_details=details)]

    def _message(self, line: JsonObject) -> list[StreamChunk]:
        raw = line.get("message")
        if raw is None:
            return []
        message = as_object(raw)
        if message is None:
            raise MalformedResponse(f"Ollama 'message' is not an object: {raw!r:.200}")
        chunks: list[StreamChunk] = []
        thinking = message.get("thinking")
        if isinstance(thinking, str) and thinking:
            chunks.append(ReasoningChunk(text=thinking))
        content = message.get("content")
        if isinstance(content, str) and content:
            chunks.append(TextChunk(text=content))
        calls = message.get("tool_calls")
        if calls is not None:
            if not isinstance(calls, list):
                raise MalformedResponse(f"Ollama 'tool_calls' is not a list: {calls!r:.200}")
            stamp = line.get("created_at")
            for call in cast("list[object]", calls):
                chunks.extend(self._tool_call(call, stamp if isinstance(stamp, str) else ""))
        return chunks

    def _tool_call(self, raw: object, stamp: str) -> list[StreamChunk]:
        call = as_object(raw)
        function = as_object(call.get("function")) if call is not None else None
        name = function.get("name") if function is not None else None
        if function is None or not isinstance(name, str) or not name:
            raise MalformedResponse(f"Ollama tool call without a function name: {raw!r:.200}")
        arguments = function.get("arguments", {})
        text = arguments if isinstance(arguments, str) else json.dumps(arguments)
        given = call.get("id") if call is not None else None
        call_id = given if isinstance(given, str) and given else self._new_id(stamp)
        self._calls += 1
        return whole_tool_call(call_id, self._names.local(name), text)

    def _new_id(self, stamp: str) -> str:
        # Deterministic for a given stream (transcript tests replay it exactly), yet distinct
        # across the steps of a run: the line's timestamp differs from one answer to the next.
        if not stamp:
            return f"call_{self._calls}"
        digest = hashlib.sha256(stamp.encode()).hexdigest()[:8]
        return f"call_{digest}_{self._calls}"


def _status_of(line: JsonObject) -> int | None:
    """An HTTP status an error line carries (hosted or proxied Ollama), if any."""
    for key in ("status_code", "status", "code"):
        value = line.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and 400 <= value <= 599:
            return value
    return None


def _count(line: JsonObject, key: str) -> int:
    value = line.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0
