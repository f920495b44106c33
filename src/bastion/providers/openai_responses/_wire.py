"""Narrowing of raw Responses-API JSON: typed reads that fail as ``MalformedResponse``.

Streamed events are read field by field rather than validated into models: a pydantic
object per delta would cost more than the rest of the parse. Used by ``_parser`` and
``_errors``.
"""

from __future__ import annotations

from typing import cast

from bastion.core import JsonObject, MalformedResponse
from bastion.providers._errors import as_object

__all__ = ["obj", "opt_int", "opt_list", "opt_obj", "opt_str", "req_str"]


def obj(value: object, what: str) -> JsonObject:
    """``value`` as a JSON object.

    Raises:
        MalformedResponse: ``value`` is not a JSON object.
    """
    narrowed = as_object(value)
    if narrowed is None:
        raise MalformedResponse(f"Expected {what} to be a JSON object, got {value!r:.200}.")
    return narrowed


def opt_obj(data: JsonObject, key: str) -> JsonObject | None:
    """``data[key]`` as a JSON object, or None when absent or null.

    Raises:
        MalformedResponse: The field is present but not an object.
    """
    value = data.get(key)
    return None if value is None else obj(value, repr(key))


def opt_list(data: JsonObject, key: str) -> list[object] | None:
    """``data[key]`` as a JSON array, or None when absent or null.

    Raises:
        MalformedResponse: The field is present but not an array.
    """
    value = data.get(key)
    if value is None:
        return None
    if isinstance(value, list):
        return cast("list[object]", value)
    raise MalformedResponse(f"Expected {key!r} to be an array, got {value!r:.200}.")


def opt_str(data: JsonObject, key: str) -> str | None:
    """``data[key]`` as a string, or None when absent or null.

    Raises:
        MalformedResponse: The field is present but not a string.
    """
    value = data.get(key)
    if value is None or isinstance(value, str):
        return value
    raise MalformedResponse(f"Expected {key!r} to be a string, got {value!r:.200}.")


def req_str(data: JsonObject, key: str) -> str:
    """``data[key]`` as a string.

    Raises:
        MalformedResponse: The field is missing or not a string.
    """
    value = opt_str(data, key)
    if value is None:
        raise MalformedResponse(f"Missing string field {key!r} in {data!r:.200}.")
    return value


def opt_int(data: JsonObject | None, key: str) -> int:
    """``data[key]`` as an int, 0 when ``data`` is None or the field absent or null.

    Raises:
        MalformedResponse: The field is present but not an integer.
    """
    if data is None:
        return 0
    value = data.get(key)
    if value is None:
        return 0
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    raise MalformedResponse(f"Expected {key!r} to be an integer, got {value!r:.200}.")
