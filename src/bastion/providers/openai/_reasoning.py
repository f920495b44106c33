"""OpenRouter's ``reasoning_details``: streamed pieces folded back into whole entries.

OpenRouter streams each reasoning detail (``reasoning.text``, ``reasoning.summary``,
``reasoning.encrypted``) in pieces that share an ``index``: the text-like fields
(``text``, ``summary``, ``data``) arrive in parts, the rest (``type``, ``id``, ``format``,
``signature``) on any piece. It asks for the array back, unchanged, on the next request,
or the upstream model (Anthropic's signed thinking, OpenAI's encrypted reasoning) rejects
the conversation. :class:`ReasoningDetails` rebuilds exactly the entries a non-streamed
answer would carry. Used by ``_parser``.
"""

from __future__ import annotations

from typing import cast

from bastion.core import JsonObject, MalformedResponse
from bastion.providers._errors import as_object

__all__ = ["ReasoningDetails"]

_JOINED = ("text", "summary", "data")


class ReasoningDetails:
    """Accumulates the ``reasoning_details`` of one answer, entry by entry.

    Text-like pieces are kept in lists and joined once, in :meth:`entries`: joining as they
    arrive would copy the whole text again for every piece.
    """

    __slots__ = ("_by_index", "_entries", "_pieces")

    def __init__(self) -> None:
        self._entries: list[JsonObject] = []
        self._by_index: dict[int, int] = {}  # wire index → position in _entries
        self._pieces: list[dict[str, list[str]]] = []  # per entry: field → pieces

    def add(self, value: object, raw: str) -> None:
        """Fold one delta's ``reasoning_details`` array in.

        Raises:
            MalformedResponse: The value is not an array of objects.
        """
        if not isinstance(value, list):
            raise MalformedResponse(f"'reasoning_details' is not a list: {raw[:200]!r}", body=raw)
        for raw_entry in cast("list[object]", value):
            entry = as_object(raw_entry)
            if entry is None:
                raise MalformedResponse(
                    f"A reasoning detail is not an object: {raw[:200]!r}", body=raw
                )
            index = entry.get("index")
            position = self._by_index.get(index) if isinstance(index, int) else None
            if position is None:
                if isinstance(index, int):
                    self._by_index[index] = len(self._entries)
                self._entries.append(dict(entry))
                self._pieces.append({k: [v] for k in _JOINED if isinstance(v := entry.get(k), str)})
                continue
            current, pieces = self._entries[position], self._pieces[position]
            for key, piece in entry.items():
                if key in _JOINED and isinstance(piece, str) and key in pieces:
                    pieces[key].append(piece)
                elif piece is not None or key not in current:
                    current[key] = piece
                    if key in _JOINED and isinstance(piece, str):
                        pieces[key] = [piece]

    def entries(self) -> list[JsonObject]:
        """The whole entries, in the order they began."""
        for current, pieces in zip(self._entries, self._pieces, strict=True):
            for key, parts in pieces.items():
                current[key] = "".join(parts)
        return self._entries
