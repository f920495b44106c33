"""JSON Schema → Gemini's function-declaration schema subset."""

from __future__ import annotations

from bastion.providers.gemini._schema import gemini_schema


def test_recursive_refs_stop_at_an_object() -> None:
    # covers A-11
    schema = {
        "$defs": {"Node": {"type": "object", "properties": {"child": {"$ref": "#/$defs/Node"}}}},
        "$ref": "#/$defs/Node",
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {"child": {"type": "object"}},
    }


def test_const_type_lists_one_of_and_all_of() -> None:
    # covers A-11
    schema = {
        "type": "object",
        "properties": {
            "kind": {"const": "circle", "title": "Kind"},
            "name": {"type": ["string", "null"], "examples": ["x"]},
            "size": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
            "unit": {"allOf": [{"$ref": "#/definitions/U"}], "description": "The unit."},
            "either": {"type": ["string", "integer"]},
        },
        "definitions": {"U": {"type": "string", "enum": ["m"]}},
    }
    assert gemini_schema(schema) == {
        "type": "object",
        "properties": {
            "kind": {"enum": ["circle"], "type": "string"},
            "name": {"type": "string", "nullable": True},
            "size": {"anyOf": [{"type": "integer"}, {"type": "number"}]},
            "unit": {"type": "string", "enum": ["m"], "description": "The unit."},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
        },
    }


def test_unknown_ref_becomes_an_object() -> None:
    # covers A-11
    assert gemini_schema({"$ref": "#/$defs/Missing"}) == {"type": "object"}
