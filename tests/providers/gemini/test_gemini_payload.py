"""The exact HTTP request Gemini receives: URL, headers, body, and signatures sent back."""

from __future__ import annotations

from typing import Any

import pytest

from bastion.core import (
    AssistantMessage,
    FilePart,
    ImagePart,
    ModelRequest,
    ModelSettings,
    OutputSpec,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserError,
    UserMessage,
)
from bastion.providers.gemini import GeminiProtocol

from ._support import model_for

SIGNATURE = "CiQB0e2Kb+Yg6ceQ3Jp/kZ2lT5Xr1Nq0wQ7vFzC8mHUa9sE=\u2028tail"

WEATHER_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "WeatherArgs",
    "type": "object",
    "additionalProperties": False,
    "$defs": {
        "Unit": {"title": "Unit", "type": "string", "enum": ["celsius", "fahrenheit"]},
    },
    "properties": {
        "city": {"title": "City", "type": "string", "description": "City name."},
        "unit": {"$ref": "#/$defs/Unit", "default": "celsius"},
        "days": {"anyOf": [{"type": "integer", "minimum": 1}, {"type": "null"}], "default": None},
        "tags": {"type": "array", "items": {"type": "string"}, "uniqueItems": True},
    },
    "required": ["city"],
}

CONVERSATION: list[Any] = [
    SystemMessage(content="You are a weather bot."),
    UserMessage(
        content=[
            TextPart(text="What is the weather where this photo was taken?"),
            ImagePart(data="iVBORw0KGgo=", media_type="image/png"),
            FilePart(url="https://example.com/trip.pdf", media_type="application/pdf"),
        ]
    ),
    AssistantMessage(
        parts=[TextPart(text="Let me check.")],
        tool_calls=[ToolCall(id="call_1", name="get_weather", arguments='{"city": "Paris"}')],
    ),
    ToolMessage(tool_call_id="call_1", tool_name="get_weather", content="18°C, cloudy"),
]


async def test_full_request_is_exact() -> None:
    # covers C9, A-11
    model, server = model_for("text.sse")
    request = ModelRequest(
        messages=CONVERSATION,
        tools=[
            ToolDefinition(name="get_weather", description="Weather.", parameters=WEATHER_SCHEMA)
        ],
        settings=ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_tokens=512,
            stop=("END",),
            seed=7,
            tool_choice="auto",
            extra={"thinkingConfig": {"includeThoughts": True}},
        ),
    )
    await model.request(request)
    (sent,) = server.requests
    assert str(sent.url) == (
        "https://generativelanguage.googleapis.com/v1beta/models/"
        "gemini-2.5-flash:streamGenerateContent?alt=sse"
    )
    assert sent.method == "POST"
    assert sent.headers["x-goog-api-key"] == "test-key"
    assert sent.headers["content-type"] == "application/json"
    assert "authorization" not in sent.headers
    assert server.body() == {
        "systemInstruction": {"parts": [{"text": "You are a weather bot."}]},
        "contents": [
            {
                "role": "user",
                "parts": [
                    {"text": "What is the weather where this photo was taken?"},
                    {"inlineData": {"mimeType": "image/png", "data": "iVBORw0KGgo="}},
                    {
                        "fileData": {
                            "mimeType": "application/pdf",
                            "fileUri": "https://example.com/trip.pdf",
                        }
                    },
                ],
            },
            {
                "role": "model",
                "parts": [
                    {"text": "Let me check."},
                    {"functionCall": {"name": "get_weather", "args": {"city": "Paris"}}},
                ],
            },
            {
                "role": "user",
                "parts": [
                    {
                        "functionResponse": {
                            "name": "get_weather",
                            "response": {"result": "18°C, cloudy"},
                        }
                    }
                ],
            },
        ],
        "tools": [
            {
                "functionDeclarations": [
                    {
                        "name": "get_weather",
                        "description": "Weather.",
                        "parameters": {
                            "type": "object",
                            "properties": {
                                "city": {"type": "string", "description": "City name."},
                                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
                                "days": {"type": "integer", "minimum": 1, "nullable": True},
                                "tags": {"type": "array", "items": {"type": "string"}},
                            },
                            "required": ["city"],
                        },
                    }
                ]
            }
        ],
        "toolConfig": {"functionCallingConfig": {"mode": "AUTO"}},
        "generationConfig": {
            "temperature": 0.2,
            "topP": 0.9,
            "maxOutputTokens": 512,
            "stopSequences": ["END"],
            "seed": 7,
            "thinkingConfig": {"includeThoughts": True},
        },
    }


async def test_thought_signature_goes_back_byte_exact() -> None:
    # covers G-63
    tool = ToolDefinition(name="srv.lookup", description="Look up.", parameters={"type": "object"})
    model, server = model_for("thought_function_call.sse", "text.sse")
    history: list[Any] = [UserMessage(content="Weather in Paris?")]
    first = await model.request(ModelRequest(messages=history, tools=[tool]))
    (call,) = first.message.tool_calls
    history += [
        first.message,
        ToolMessage(tool_call_id=call.id, tool_name=call.name, content="18°C"),
    ]
    await model.request(ModelRequest(messages=history, tools=[tool]))
    raw = server.requests[1].content
    assert b'"thoughtSignature":"CiQB0e2Kb+Yg6ceQ3Jp/kZ2lT5Xr1Nq0wQ7vFzC8mHUa9sE=' in raw
    assert server.body()["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"text": "**Checking the weather**\nThe user wants Paris.", "thought": True},
                {
                    "functionCall": {"name": "srv.lookup", "args": {"city": "Paris"}},
                    "thoughtSignature": SIGNATURE,
                },
            ],
        },
        {
            "role": "user",
            "parts": [{"functionResponse": {"name": "srv.lookup", "response": {"result": "18°C"}}}],
        },
    ]


async def test_signature_on_an_answer_part_goes_back_on_that_part() -> None:
    # covers G-63
    model, server = model_for("thought_text.sse", "text.sse")
    history: list[Any] = [UserMessage(content="2+2?")]
    first = await model.request(ModelRequest(messages=history))
    history += [first.message, UserMessage(content="Thanks")]
    await model.request(ModelRequest(messages=history))
    assert server.body()["contents"] == [
        {"role": "user", "parts": [{"text": "2+2?"}]},
        {
            "role": "model",
            "parts": [
                {"text": "Adding two and two.", "thought": True},
                {"text": "The answer is ", "thoughtSignature": "Ev8BCvwBAXLI2nw+sig/B=="},
                {"text": "4."},
            ],
        },
        {"role": "user", "parts": [{"text": "Thanks"}]},
    ]


def payload(messages: list[Any], **kwargs: Any) -> dict[str, Any]:
    protocol = GeminiProtocol()
    request = ModelRequest(messages=messages, **kwargs)
    return protocol.payload(request, "gemini-2.5-flash", protocol.name_map(request))


def test_consecutive_tool_results_share_one_turn_and_errors_use_error_key() -> None:
    # covers A-11
    body = payload(
        [
            UserMessage(content="go"),
            AssistantMessage(
                tool_calls=[
                    ToolCall(id="call_1", name="a", arguments='{"x": 1}'),
                    ToolCall(id="call_2", name="b", arguments="not json"),
                ]
            ),
            ToolMessage(tool_call_id="call_1", tool_name="a", content="one"),
            ToolMessage(tool_call_id="call_2", tool_name="b", content="bad args", is_error=True),
        ]
    )
    assert body["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {"functionCall": {"name": "a", "args": {"x": 1}}},
                {"functionCall": {"name": "b", "args": {}}},
            ],
        },
        {
            "role": "user",
            "parts": [
                {"functionResponse": {"name": "a", "response": {"result": "one"}}},
                {"functionResponse": {"name": "b", "response": {"error": "bad args"}}},
            ],
        },
    ]


def test_foreign_signatures_are_not_sent() -> None:
    # covers G-63
    body = payload(
        [
            UserMessage(content="hi"),
            AssistantMessage(
                parts=[ReasoningPart(text="hmm", signature="anthropic-sig"), TextPart(text="hello")]
            ),
        ]
    )
    assert body["contents"][1] == {
        "role": "model",
        "parts": [{"text": "hmm", "thought": True}, {"text": "hello"}],
    }


def test_leading_signature_rides_on_the_next_part() -> None:
    # covers G-63
    mark = {"vendor": "gemini"}
    body = payload(
        [
            UserMessage(content="hi"),
            AssistantMessage(
                parts=[ReasoningPart(signature="s1", provider_details=mark), TextPart(text="a")],
                tool_calls=[ToolCall(id="call_1", name="t")],
            ),
            ToolMessage(tool_call_id="call_1", tool_name="t", content="ok"),
            AssistantMessage(parts=[ReasoningPart(signature="s2", provider_details=mark)]),
        ]
    )
    assert body["contents"][1]["parts"] == [
        {"text": "a", "thoughtSignature": "s1"},
        {"functionCall": {"name": "t", "args": {}}},
    ]
    assert body["contents"][3]["parts"] == [{"text": "", "thoughtSignature": "s2"}]


@pytest.mark.parametrize(
    ("choice", "config"),
    [
        ("required", {"mode": "ANY"}),
        ("none", {"mode": "NONE"}),
        ("srv.find", {"mode": "ANY", "allowedFunctionNames": ["srv.find"]}),
    ],
)
def test_tool_choice_modes(choice: str, config: dict[str, Any]) -> None:
    # covers A-11
    tool = ToolDefinition(name="srv.find", description="Find.", parameters={"type": "object"})
    body = payload(
        [UserMessage(content="hi")], tools=[tool], settings=ModelSettings(tool_choice=choice)
    )
    assert body["toolConfig"] == {"functionCallingConfig": config}


def test_structured_output_uses_response_json_schema() -> None:
    # covers A-11
    schema = {"type": "object", "properties": {"city": {"type": "string"}}}
    body = payload([UserMessage(content="hi")], output=OutputSpec(name="Out", json_schema=schema))
    assert body == {
        "contents": [{"role": "user", "parts": [{"text": "hi"}]}],
        "generationConfig": {"responseMimeType": "application/json", "responseJsonSchema": schema},
    }


def test_long_and_foreign_tool_names_are_mapped() -> None:
    # covers C9
    long_name = "mcp." + "x" * 80
    request = ModelRequest(
        messages=[UserMessage(content="hi")],
        tools=[ToolDefinition(name=long_name, description="", parameters={"type": "object"})],
    )
    names = GeminiProtocol().name_map(request)
    wire = names.wire(long_name)
    assert len(wire) <= 64
    assert names.local(wire) == long_name


def test_media_without_a_type_is_a_user_error() -> None:
    # covers A-11
    with pytest.raises(UserError, match="media_type"):
        payload([UserMessage(content=[ImagePart(data="AAAA")])])
    guessed = payload([UserMessage(content=[ImagePart(url="https://x.test/cat.png")])])
    assert guessed["contents"][0]["parts"] == [
        {"fileData": {"mimeType": "image/png", "fileUri": "https://x.test/cat.png"}}
    ]
