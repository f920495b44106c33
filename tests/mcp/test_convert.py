"""MCP wire objects to Bastion values: argument schemas, content blocks, results."""

from __future__ import annotations

import base64

import pytest
from hypothesis import given
from hypothesis import strategies as st
from mcp import types

from bastion.core import JsonObject
from bastion.mcp._convert import RawSchema, render_content, to_output
from bastion.tools import ToolArgumentsError, ToolError

SCHEMA: JsonObject = {"type": "object", "properties": {"x": {"type": "integer"}}, "required": ["x"]}


def test_arguments_are_checked_against_the_servers_schema_on_first_use():
    schema = RawSchema(SCHEMA)
    assert schema.parameters is SCHEMA  # advertised as given
    assert schema.validate('{"x": 3}') == (({"x": 3},), {})
    with pytest.raises(ToolArgumentsError) as info:
        schema.validate('{"x": "three"}')
    assert info.value.problems == ["`x`: 'three' is not of type 'integer'"]
    with pytest.raises(ToolArgumentsError, match="must be a JSON object"):
        schema.validate("[1, 2]")
    with pytest.raises(ToolArgumentsError, match="not valid JSON"):
        schema.validate("{x: 1}")


def test_an_invalid_schema_is_left_for_the_server_to_judge():
    schema = RawSchema({"type": "object", "properties": {"x": {"type": "integr"}}})
    assert schema.validate('{"x": "anything"}') == (({"x": "anything"},), {})


@given(st.text(max_size=60))
def test_any_text_either_validates_or_is_an_arguments_error(text: str):
    try:
        (value,), _ = RawSchema(SCHEMA).validate(text)
    except ToolArgumentsError as exc:
        problems = exc.problems
    else:
        problems = []
        assert isinstance(value["x"], int)
    assert all(isinstance(p, str) and p for p in problems)


def test_content_blocks_become_text_links_and_descriptions():
    blocks: list[types.ContentBlock] = [
        types.TextContent(type="text", text="Summary."),
        types.ResourceLink(type="resource_link", uri="file:///r.csv", name="r.csv", size=2048),
        types.ImageContent(
            type="image", data=base64.b64encode(b"x" * 300).decode(), mime_type="image/png"
        ),
        types.EmbeddedResource(
            type="resource",
            resource=types.TextResourceContents(uri="memo://1", text="Embedded text."),
        ),
    ]
    text, links = render_content("files", blocks)
    assert text.splitlines() == [
        "Summary.",
        "[resource 'r.csv' (2,048 bytes): read it with read_result(handle='mcp:files:file:///r.csv')]",
        "[image (image/png, about 300 bytes) not shown]",
        "Embedded text.",
    ]
    assert links == [
        {
            "uri": "file:///r.csv",
            "name": "r.csv",
            "mime_type": None,
            "size": 2048,
            "handle": "mcp:files:file:///r.csv",
        }
    ]


def test_structured_content_is_the_output_and_is_error_a_tool_error():
    ok = types.CallToolResult(
        content=[types.TextContent(type="text", text="{}")], structured_content={"n": 1}
    )
    assert to_output("s", "t", ok) == (
        {"n": 1},
        {"mcp": {"server": "s", "tool": "t", "structured_content": {"n": 1}}},
    )
    failed = types.CallToolResult(
        content=[types.TextContent(type="text", text="nope")], is_error=True
    )
    with pytest.raises(ToolError) as info:
        to_output("s", "t", failed)
    assert info.value.message == "nope"
    assert info.value.metadata == {"mcp": {"server": "s", "tool": "t"}}
