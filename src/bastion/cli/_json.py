"""Journaled JSON (run states, entry payloads) narrowed where the commands read it."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from bastion.core import JsonValue

__all__ = ["JsonValue", "as_list", "as_object", "as_objects"]


def as_object(value: JsonValue) -> Mapping[str, JsonValue]:
    """``value`` when it is a JSON object; empty when it is missing or anything else."""
    return value if isinstance(value, Mapping) else {}


def as_list(value: JsonValue) -> Sequence[JsonValue]:
    """``value`` when it is a JSON array; empty when it is missing or anything else."""
    return value if isinstance(value, Sequence) and not isinstance(value, str) else ()


def as_objects(value: JsonValue) -> list[Mapping[str, JsonValue]]:
    """The objects of the JSON array ``value`` (empty when it is not one)."""
    return [item for item in as_list(value) if isinstance(item, Mapping)]
