"""Rendering a tool's return value into the text the model reads."""

import json
from dataclasses import dataclass

from pydantic import BaseModel

from bastion.tools import render_output


class Row(BaseModel):
    id: int
    name: str


@dataclass
class Point:
    x: int
    y: int


def test_strings_are_unchanged_and_none_is_empty():
    # covers C8
    assert render_output("as is\n") == "as is\n"
    assert render_output(None) == ""


def test_structured_values_become_json():
    # covers C8
    assert json.loads(render_output({"a": [1, 2.5, None, True]})) == {"a": [1, 2.5, None, True]}
    assert json.loads(render_output([Row(id=1, name="x")])) == [{"id": 1, "name": "x"}]
    assert json.loads(render_output(Point(x=1, y=2))) == {"x": 1, "y": 2}
    assert render_output(3) == "3"


def test_unserializable_values_fall_back_to_str():
    # covers C8
    class Opaque:
        def __str__(self) -> str:
            return "<opaque>"

    assert render_output({"v": Opaque()}) == '{"v":"<opaque>"}'
