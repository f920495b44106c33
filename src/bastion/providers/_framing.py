"""Incremental decoders for the two streaming framings vendors use: SSE and NDJSON.

Both accept bytes in arbitrary chunks (a network read can split a line, or a UTF-8
character, anywhere) and return complete items only. Called by ``_http.HttpModel``.
"""

from __future__ import annotations

import codecs
import json
from dataclasses import dataclass
from typing import TypeAlias

from bastion.core import JsonValue, MalformedResponse

__all__ = ["NDJSONDecoder", "SSEDecoder", "SSEEvent", "StreamItem"]


@dataclass(kw_only=True, slots=True)
class SSEEvent:
    """One server-sent event: its ``event`` name (``None`` when unnamed) and ``data`` text."""

    data: str
    event: str | None = None
    id: str | None = None

    def json(self) -> JsonValue:
        """Parse ``data`` as JSON.

        Raises:
            MalformedResponse: ``data`` is not JSON.
        """
        try:
            return json.loads(self.data)
        except ValueError as exc:
            raise MalformedResponse(
                f"Server-sent event data is not JSON: {self.data[:200]!r}", body=self.data
            ) from exc


StreamItem: TypeAlias = "SSEEvent | JsonValue"
"""One decoded item of a streamed answer: an SSE event, or one NDJSON (or whole-body) value."""


class _Lines:
    """Splits decoded text into lines at LF, CRLF or CR, even when split across chunks."""

    __slots__ = ("_cr", "_decoder", "_pending")

    def __init__(self) -> None:
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._pending = ""
        self._cr = False

    def feed(self, chunk: bytes, *, final: bool = False) -> list[str]:
        text = self._decoder.decode(chunk, final=final)
        if self._cr and text.startswith("\n"):
            text = text[1:]  # the \n of a \r\n split across chunks
        self._cr = text.endswith("\r")
        buffer = self._pending + text
        lines = buffer.replace("\r\n", "\n").replace("\r", "\n").split("\n")
        self._pending = lines.pop()
        if final and self._pending:
            lines.append(self._pending)
            self._pending = ""
        return lines


class SSEDecoder:
    """Decodes ``text/event-stream`` per the WHATWG HTML standard (comments, multi-line data)."""

    __slots__ = ("_data", "_event", "_id", "_lines")

    def __init__(self) -> None:
        self._lines = _Lines()
        self._data: list[str] = []
        self._event: str | None = None
        self._id: str | None = None

    def feed(self, chunk: bytes) -> list[SSEEvent]:
        """Decode a chunk; return the events it completed."""
        return self._take(self._lines.feed(chunk))

    def close(self) -> list[SSEEvent]:
        """End of stream: return the last event if the server did not end it with a blank line."""
        events = self._take(self._lines.feed(b"", final=True))
        if self._data or self._event is not None:
            events.extend(self._take([""]))
        return events

    def _take(self, lines: list[str]) -> list[SSEEvent]:
        events: list[SSEEvent] = []
        for line in lines:
            if not line:
                if self._data or self._event is not None:
                    events.append(
                        SSEEvent(data="\n".join(self._data), event=self._event, id=self._id)
                    )
                self._data = []
                self._event = None
                continue
            if line.startswith(":"):
                continue  # a comment (keep-alive)
            field, _, value = line.partition(":")
            if value.startswith(" "):
                value = value[1:]
            if field == "data":
                self._data.append(value)
            elif field == "event":
                self._event = value
            elif field == "id":
                self._id = value
        return events


class NDJSONDecoder:
    """Decodes newline-delimited JSON (Ollama's ``/api/chat`` stream)."""

    __slots__ = ("_lines",)

    def __init__(self) -> None:
        self._lines = _Lines()

    def feed(self, chunk: bytes) -> list[JsonValue]:
        """Decode a chunk; return the JSON values of the lines it completed.

        Raises:
            MalformedResponse: A line is not JSON.
        """
        return [_parse(line) for line in self._lines.feed(chunk) if line.strip()]

    def close(self) -> list[JsonValue]:
        """End of stream: parse a last line that had no newline."""
        return [_parse(line) for line in self._lines.feed(b"", final=True) if line.strip()]


def _parse(line: str) -> JsonValue:
    try:
        return json.loads(line)
    except ValueError as exc:
        raise MalformedResponse(f"Stream line is not JSON: {line[:200]!r}", body=line) from exc
