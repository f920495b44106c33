"""The request body sent to the Messages API (SPEC C3, C9, C16)."""

from __future__ import annotations

import base64

import pytest

from bastion.core import (
    AssistantMessage,
    AudioPart,
    FilePart,
    ImagePart,
    ModelRequest,
    ModelSettings,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserError,
    UserMessage,
)

from ._support import Server, transcript

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds=="
WEATHER = ToolDefinition(
    name="get_weather",
    description="The weather at a location.",
    parameters={
        "type": "object",
        "properties": {"location": {"type": "string"}},
        "required": ["location"],
    },
)
LOOKUP = ToolDefinition(name="kb.lookup", description="Look a term up.", parameters={})


async def test_full_conversation_request_json() -> None:
    # covers C3, C9, C16
    server = Server(transcript("text"))
    request = ModelRequest(
        messages=[
            SystemMessage(content="You are terse."),
            SystemMessage(content="Answer in English."),
            UserMessage(
                content=[
                    TextPart(text="What is in this picture, and the weather there?"),
                    ImagePart(data="iVBORw0KGgo=", media_type="image/png"),
                    ImagePart(url="https://example.com/paris.jpg"),
                ]
            ),
            AssistantMessage(
                parts=[
                    ReasoningPart(text="It shows Paris. Check weather.", signature=SIGNATURE),
                    TextPart(text="Let me check."),
                ],
                tool_calls=[
                    ToolCall(id="toolu_1", name="get_weather", arguments='{"location": "Paris"}'),
                    ToolCall(id="toolu_2", name="kb.lookup", arguments='{"term": "Paris"}'),
                ],
            ),
            ToolMessage(tool_call_id="toolu_1", tool_name="get_weather", content="18C, sunny"),
            ToolMessage(
                tool_call_id="toolu_2",
                tool_name="kb.lookup",
                content="no such term",
                is_error=True,
            ),
            UserMessage(content="And tomorrow?"),
        ],
        tools=[WEATHER, LOOKUP],
        settings=ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_tokens=1024,
            stop=("###",),
            tool_choice="auto",
            extra={"thinking": {"type": "enabled", "budget_tokens": 512}},
        ),
    )
    await server.model().request(request)
    assert server.requests[0] == {
        "model": "claude-sonnet-4-20250514",
        "max_tokens": 1024,
        "system": "You are terse.\n\nAnswer in English.",
        "messages": [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in this picture, and the weather there?"},
                    {
                        "type": "image",
                        "source": {
                            "type": "base64",
                            "media_type": "image/png",
                            "data": "iVBORw0KGgo=",
                        },
                    },
                    {
                        "type": "image",
                        "source": {"type": "url", "url": "https://example.com/paris.jpg"},
                    },
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "thinking",
                        "thinking": "It shows Paris. Check weather.",
                        "signature": SIGNATURE,
                    },
                    {"type": "text", "text": "Let me check."},
                    {
                        "type": "tool_use",
                        "id": "toolu_1",
                        "name": "get_weather",
                        "input": {"location": "Paris"},
                    },
                    {
                        "type": "tool_use",
                        "id": "toolu_2",
                        "name": "kb__lookup",
                        "input": {"term": "Paris"},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_1",
                        "content": "18C, sunny",
                        "is_error": False,
                    },
                    {
                        "type": "tool_result",
                        "tool_use_id": "toolu_2",
                        "content": "no such term",
                        "is_error": True,
                    },
                    {"type": "text", "text": "And tomorrow?"},
                ],
            },
        ],
        "tools": [
            {
                "name": "get_weather",
                "description": "The weather at a location.",
                "input_schema": WEATHER.parameters,
            },
            {"name": "kb__lookup", "description": "Look a term up.", "input_schema": {}},
        ],
        "tool_choice": {"type": "auto"},
        "temperature": 0.2,
        "top_p": 0.9,
        "stop_sequences": ["###"],
        "thinking": {"type": "enabled", "budget_tokens": 512},
        "stream": True,
    }


@pytest.mark.parametrize(
    ("choice", "parallel", "expected"),
    [
        ("auto", None, {"type": "auto"}),
        ("required", None, {"type": "any"}),
        ("none", None, {"type": "none"}),
        ("kb.lookup", None, {"type": "tool", "name": "kb__lookup"}),
        (None, False, {"type": "auto", "disable_parallel_tool_use": True}),
        ("required", False, {"type": "any", "disable_parallel_tool_use": True}),
        (None, None, None),
    ],
)
async def test_tool_choice(choice: str | None, parallel: bool | None, expected: object) -> None:
    # covers C9
    server = Server(transcript("text"))
    request = ModelRequest(
        messages=[UserMessage(content="hi")],
        tools=[LOOKUP],
        settings=ModelSettings(tool_choice=choice, parallel_tool_calls=parallel),
    )
    await server.model().request(request)
    assert server.requests[0].get("tool_choice") == expected


async def test_documents_and_tool_result_parts() -> None:
    # covers C3
    server = Server(transcript("text"))
    pdf = FilePart(data="JVBERi0xLjQ=", media_type="application/pdf", filename="a.pdf")
    notes = FilePart.from_bytes(b"plain notes", "text/plain")
    linked = FilePart(url="https://example.com/b.pdf", media_type="application/pdf")
    request = ModelRequest(
        messages=[
            UserMessage(content=[pdf, notes, linked]),
            AssistantMessage(tool_calls=[ToolCall(id="t1", name="shot", arguments="{bad")]),
            ToolMessage(
                tool_call_id="t1",
                tool_name="shot",
                content=[TextPart(text="here"), ImagePart(data="R0lG", media_type="image/gif")],
            ),
            SystemMessage(content="Late instruction."),
        ]
    )
    await server.model().request(request)
    messages = server.requests[0]["messages"]
    assert "system" not in server.requests[0]
    assert messages[0]["content"] == [
        {
            "type": "document",
            "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQ="},
            "title": "a.pdf",
        },
        {
            "type": "document",
            "source": {"type": "text", "media_type": "text/plain", "data": "plain notes"},
        },
        {"type": "document", "source": {"type": "url", "url": "https://example.com/b.pdf"}},
    ]
    assert messages[1]["content"] == [{"type": "tool_use", "id": "t1", "name": "shot", "input": {}}]
    assert messages[2] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "t1",
                "content": [
                    {"type": "text", "text": "here"},
                    {
                        "type": "image",
                        "source": {"type": "base64", "media_type": "image/gif", "data": "R0lG"},
                    },
                ],
                "is_error": False,
            },
            {"type": "text", "text": "Late instruction."},
        ],
    }


async def test_unsigned_reasoning_from_other_vendors_is_dropped() -> None:
    # covers C16
    server = Server(transcript("text"))
    request = ModelRequest(
        messages=[
            UserMessage(content="hi"),
            AssistantMessage(parts=[ReasoningPart(text="thoughts"), TextPart(text="hello")]),
        ]
    )
    await server.model().request(request)
    assert server.requests[0]["messages"][1]["content"] == [{"type": "text", "text": "hello"}]


@pytest.mark.parametrize(
    "message",
    [
        UserMessage(content=[AudioPart(data="AAAA", media_type="audio/wav")]),
        UserMessage(content=[ImagePart(data="AAAA")]),
        UserMessage(content=[ImagePart()]),
        UserMessage(content=[FilePart(data="%%%", media_type="text/plain")]),
        AssistantMessage(parts=[ImagePart(url="https://example.com/x.png")]),
    ],
)
async def test_content_the_api_cannot_take_is_a_user_error(
    message: UserMessage | AssistantMessage,
) -> None:
    # covers C3
    server = Server(transcript("text"))
    with pytest.raises(UserError):
        await server.model().request(ModelRequest(messages=[message]))
    assert server.requests == []


def test_text_file_round_trip_helper() -> None:
    # covers C3
    assert base64.b64decode(FilePart.from_bytes(b"x", "text/plain").data or "") == b"x"
