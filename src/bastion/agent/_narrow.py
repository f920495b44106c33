"""Narrowing of JSON read back from a store or given in an answer: objects and arrays.

The helpers take what JSON decoding or a caller gave (``object``) and return it typed, or
raise a ``UserError`` that says what was expected where.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import cast

from bastion.core import UserError

__all__ = ["as_json_object", "json_arguments", "json_object", "json_objects"]


def json_arguments(text: str) -> dict[str, object]:
    """A tool call's arguments text as an object; ``{}`` when it is not a JSON object."""
    try:
        arguments = as_json_object(json.loads(text or "{}"))
    except ValueError:
        return {}
    return {} if arguments is None else dict(arguments)


def json_object(value: object, what: str) -> Mapping[str, object]:
    """``value`` as a JSON object; an absent (falsy) value is an empty one.

    Raises:
        UserError: ``value`` is something else than an object.
    """
    return _object(value, what) if value else {}


def json_objects(value: object, what: str) -> list[Mapping[str, object]]:
    """``value`` as a JSON array of objects; an absent (falsy) value is an empty one.

    Raises:
        UserError: ``value`` is not an array, or one of its items is not an object.
    """
    if not value:
        return []
    if not isinstance(value, Sequence) or isinstance(value, str | bytes):
        raise UserError(f"{what} must be a JSON array, got {type(value).__name__}.")
    items = cast("Sequence[object]", value)  # isinstance leaves the items unknown
    return [_object(item, f"{what}[{i}]") for i, item in enumerate(items)]


def as_json_object(value: object) -> Mapping[str, object] | None:
    """``value`` as a JSON object (its keys as strings), or None when it is not a mapping."""
    if not isinstance(value, Mapping):
        return None
    mapping = cast("Mapping[object, object]", value)  # isinstance leaves the items unknown
    return {str(key): item for key, item in mapping.items()}  # JSON keys are strings


def _object(value: object, what: str) -> Mapping[str, object]:
    mapping = as_json_object(value)
    if mapping is None:
        raise UserError(f"{what} must be a JSON object, got {type(value).__name__}.")
    return mapping
