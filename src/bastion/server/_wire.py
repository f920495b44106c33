"""Raw JSON read back from the event log and the stores, narrowed where it is read.

The values are pydantic's ``JsonValue`` (what ``json.loads`` gives: ``dict``, ``list`` and
scalars), so they go into the API's pydantic response bodies as they are.
"""

from __future__ import annotations

import json
from typing import NoReturn

from pydantic import JsonValue

__all__ = ["JsonValue", "loads_list", "loads_object", "number", "object_at"]


def loads_object(text: str | bytes, what: str) -> dict[str, JsonValue]:
    """The JSON object ``text`` holds.

    Raises:
        ValueError: ``text`` is not JSON, or not an object (``what`` names it).
    """
    value: JsonValue = json.loads(text)
    return value if isinstance(value, dict) else _unexpected(what, value, "an object")


def loads_list(text: str | bytes, what: str) -> list[JsonValue]:
    """The JSON array ``text`` holds.

    Raises:
        ValueError: ``text`` is not JSON, or not an array (``what`` names it).
    """
    value: JsonValue = json.loads(text)
    return value if isinstance(value, list) else _unexpected(what, value, "an array")


def _unexpected(what: str, value: JsonValue, expected: str) -> NoReturn:
    raise ValueError(f"{what} is a JSON {type(value).__name__}, not {expected}.")


def object_at(data: dict[str, JsonValue], key: str) -> dict[str, JsonValue]:
    """The object at ``data[key]``; empty when it is missing or not an object."""
    value = data.get(key)
    return value if isinstance(value, dict) else {}


def number(value: JsonValue) -> float:
    """A JSON number (or numeric text) as a float; ``0.0`` when missing or empty.

    Raises:
        ValueError: ``value`` is text that is not a number.
        TypeError: ``value`` is an array or an object.
    """
    if not value:
        return 0.0
    if isinstance(value, (int, float, str)):
        return float(value)
    raise TypeError(f"Expected a JSON number, got a JSON {type(value).__name__}.")
