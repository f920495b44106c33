"""JSON Schema → the OpenAPI-3.0 subset Gemini accepts in ``functionDeclarations.parameters``.

Called by ``_payload`` for every tool. Gemini rejects a request whose tool schema holds a
key outside its ``Schema`` object, so the schema is rebuilt from an allowlist:

* kept: ``type``, ``format``, ``description``, ``nullable``, ``enum``, ``items``,
  ``properties``, ``required``, ``minItems``, ``maxItems``, ``minLength``, ``maxLength``,
  ``pattern``, ``minimum``, ``maximum``, ``minProperties``, ``maxProperties``, ``anyOf``,
  ``propertyOrdering``;
* rewritten: ``$ref`` is inlined from ``$defs``/``definitions`` (a recursive reference
  becomes ``{"type": "object"}``); ``const`` becomes a one-value ``enum`` (typed
  ``string`` when it is a string); a ``null`` member of ``type: [...]``, ``anyOf`` or
  ``oneOf`` becomes ``nullable: true``; ``oneOf`` becomes ``anyOf``;
* stripped: everything else, notably ``$schema``, ``$id``, ``$defs``, ``title``,
  ``default``, ``examples``, ``additionalProperties``, ``exclusiveMinimum``,
  ``exclusiveMaximum``, ``multipleOf``, ``uniqueItems``, ``not``, ``allOf`` (a single-member
  ``allOf``, as pydantic emits for a described reference, is merged in).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import cast

from bastion.core import JsonObject, JsonValue
from bastion.providers._errors import as_object

__all__ = ["gemini_schema"]

_KEPT = frozenset(
    {
        "type",
        "format",
        "description",
        "nullable",
        "enum",
        "required",
        "minItems",
        "maxItems",
        "minLength",
        "maxLength",
        "pattern",
        "minimum",
        "maximum",
        "minProperties",
        "maxProperties",
        "propertyOrdering",
    }
)


def gemini_schema(schema: Mapping[str, JsonValue]) -> JsonObject:
    """Return ``schema`` rewritten into the subset Gemini's function declarations accept."""
    defs = as_object(schema.get("$defs")) or as_object(schema.get("definitions")) or {}
    return _convert(schema, defs, ())


def _convert(node: Mapping[str, JsonValue], defs: JsonObject, seen: tuple[str, ...]) -> JsonObject:
    ref = node.get("$ref")
    if isinstance(ref, str):
        name = ref.rsplit("/", 1)[-1]
        target = as_object(defs.get(name))
        if target is None or name in seen:
            return {"type": "object"}
        node = {**target, **{k: v for k, v in node.items() if k != "$ref"}}
        seen = (*seen, name)
    all_of = _objects(node.get("allOf"))
    if len(all_of) == 1:
        only = all_of[0]
        node = {**_convert(only, defs, seen), **{k: v for k, v in node.items() if k != "allOf"}}
    out: JsonObject = {}
    for key, value in node.items():
        if key == "properties" and (props := as_object(value)) is not None:
            out[key] = {
                name: _convert(sub, defs, seen)
                for name, spec in props.items()
                if (sub := as_object(spec)) is not None
            }
        elif key == "items" and (item := as_object(value)) is not None:
            out[key] = _convert(item, defs, seen)
        elif key in ("anyOf", "oneOf"):
            _merge_variants(out, _objects(value), defs, seen)
        elif key == "type" and (types := _strings(value)):
            _merge_variants(out, [{"type": t} for t in types], defs, seen)
        elif key == "const":
            out["enum"] = [value]
            if isinstance(value, str) and "type" not in node:
                out["type"] = "string"  # Gemini only takes enums of strings, typed
        elif key in _KEPT:
            out[key] = value
    return out


def _objects(value: object) -> list[JsonObject]:
    items: list[object] = cast("list[object]", value) if isinstance(value, list) else []
    return [obj for item in items if (obj := as_object(item)) is not None]


def _strings(value: object) -> list[str]:
    items: list[object] = cast("list[object]", value) if isinstance(value, list) else []
    return [item for item in items if isinstance(item, str)]


def _merge_variants(
    out: JsonObject, variants: Sequence[JsonObject], defs: JsonObject, seen: tuple[str, ...]
) -> None:
    kept = [_convert(v, defs, seen) for v in variants if v.get("type") != "null"]
    if len(kept) < len(variants):
        out["nullable"] = True
    if len(kept) == 1:
        out.update({k: v for k, v in kept[0].items() if k not in out})
    elif kept:
        out["anyOf"] = kept
