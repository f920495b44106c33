"""Raw JSON as it crosses the wire: a recursive alias, narrowed where it is read.

``JsonValue`` is covariant (``Sequence``/``Mapping``), so a ``list[dict[str, str]]`` is one;
``JsonObject`` is the mutable object a request payload is built in.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TypeAlias, cast

from ._errors import UserError

__all__ = ["JsonObject", "JsonValue", "json_object"]

JsonValue: TypeAlias = (
    "str | int | float | bool | Sequence[JsonValue] | Mapping[str, JsonValue] | None"
)
JsonObject: TypeAlias = dict[str, "JsonValue"]


def json_object(value: object, what: str) -> JsonObject:
    """``value`` as a JSON object: a ``dict`` with string keys, its values read as JSON.

    For data that arrived as JSON (from a wire, a store, a payload model): the keys are
    checked, the values are trusted to be what JSON decoding made.

    Raises:
        UserError: ``value`` is not a dict with string keys (``what`` names it).
    """
    if not isinstance(value, dict) or not all(isinstance(key, str) for key in value):  # pyright: ignore[reportUnknownVariableType] - any dict
        raise UserError(f"{what} must be a JSON object, got {value!r:.200}.")
    return cast("JsonObject", value)
