"""Raw JSON as it crosses the wire: a recursive alias, narrowed where it is read.

``JsonValue`` is covariant (``Sequence``/``Mapping``), so a ``list[dict[str, str]]`` is one;
``JsonObject`` is the mutable object a request payload is built in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias

__all__ = ["JsonObject", "JsonValue"]

JsonValue: TypeAlias = (
    "str | int | float | bool | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)
JsonObject: TypeAlias = dict[str, "JsonValue"]
