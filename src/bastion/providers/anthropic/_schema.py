"""JSON Schema → the subset Anthropic's structured outputs (``output_config.format``) accept.

Called by ``_payload`` for an :class:`~bastion.core.OutputSpec` when the model answers in
native JSON. The API requires ``additionalProperties: false`` on every object and rejects
numeric bounds (``minimum``, ``maximum``, ``multipleOf``…), string lengths, ``maxItems``
and ``minItems`` above 1; those are dropped here and named in the ``description`` instead,
as the vendor's SDKs do; the agent still validates the answer against the full schema.
A recursive schema (a ``$ref`` cycle) or an open ``additionalProperties`` cannot be
expressed: :func:`strict_output_schema` returns ``None`` and the adapter falls back to
the forced output tool.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from bastion.core import JsonObject, JsonValue
from bastion.providers._errors import as_object

__all__ = ["strict_output_schema"]

_DROPPED = frozenset(
    {
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "minLength",
        "maxLength",
        "maxItems",
        "minProperties",
        "maxProperties",
        "uniqueItems",
    }
)
_NESTED_ONE = ("items", "additionalItems", "not")
_NESTED_MANY = ("anyOf", "allOf", "oneOf", "prefixItems")


class _Unsupported(Exception):
    """The schema uses something the structured-output grammar cannot express."""


def strict_output_schema(schema: Mapping[str, JsonValue]) -> JsonObject | None:
    """``schema`` rewritten for ``output_config.format``, or None when it cannot be."""
    defs = as_object(schema.get("$defs")) or as_object(schema.get("definitions")) or {}
    if _recursive(defs):
        return None
    try:
        return _convert(schema)
    except _Unsupported:
        return None


def _recursive(defs: JsonObject) -> bool:
    edges = {name: _refs(body) for name, body in defs.items()}
    visiting: set[str] = set()
    done: set[str] = set()

    def cycles(name: str) -> bool:
        if name in done:
            return False
        if name in visiting:
            return True
        visiting.add(name)
        found = any(cycles(target) for target in edges.get(name, ()) if target in edges)
        visiting.discard(name)
        done.add(name)
        return found

    return any(cycles(name) for name in edges)


def _refs(node: object) -> set[str]:
    text = json.dumps(node)
    found: set[str] = set()
    for marker in ('"#/$defs/', '"#/definitions/'):
        for piece in text.split(marker)[1:]:
            found.add(piece.split('"', 1)[0])
    return found


def _convert(node: Mapping[str, JsonValue]) -> JsonObject:
    out: JsonObject = {}
    dropped: JsonObject = {}
    for key, value in node.items():
        if key in _DROPPED or (key == "minItems" and isinstance(value, int) and value > 1):
            dropped[key] = value
        elif key in ("properties", "$defs", "definitions") and (sub := as_object(value)):
            out[key] = {
                name: _convert(child) if (child := as_object(spec)) is not None else spec
                for name, spec in sub.items()
            }
        elif key in _NESTED_ONE and (child := as_object(value)) is not None:
            out[key] = _convert(child)
        elif key in _NESTED_MANY and isinstance(value, list):
            out[key] = [_convert(c) if (c := as_object(i)) is not None else i for i in value]
        elif key == "additionalProperties":
            if value is True or as_object(value) is not None:
                raise _Unsupported(key)  # a map with open keys: not expressible
            out[key] = False
        else:
            out[key] = value
    if out.get("type") == "object" or "properties" in out:
        out["additionalProperties"] = False
    if dropped:
        note = ", ".join(f"{k}={json.dumps(v)}" for k, v in dropped.items())
        description = out.get("description")
        out["description"] = f"{description} ({note})" if description else f"({note})"
    return out
