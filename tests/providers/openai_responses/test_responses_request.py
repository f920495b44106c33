"""Request bodies sent to ``POST /responses``: messages, tools, settings, reasoning round trip.

SPEC G-63 (provider wire format), C9 (tool names), A-11 (reasoning carried across steps),
A-12 (structured output).
"""

from __future__ import annotations

import json

import pytest

from bastion.core import (
    AssistantMessage,
    AudioPart,
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

from ._support import model_for, sse, transcript

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather at a place.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
    strict=True,
)


async def test_reasoning_round_trips_byte_exact_into_the_next_request() -> None:
    # covers A-11, G-63
    model, server = model_for(
        sse(transcript("reasoning_call")), sse(transcript("final_answer")), name="o4-mini"
    )
    first = ModelRequest(messages=[UserMessage(content="Weather in Paris?")], tools=[WEATHER])
    response = await model.request(first)
    call = response.message.tool_calls[0]
    second = ModelRequest(
        messages=[
            *first.messages,
            response.message,
            ToolMessage(tool_call_id=call.id, tool_name=call.name, content="18°C, sunny"),
        ],
        tools=[WEATHER],
    )
    answer = await model.request(second)
    assert answer.message.text == "It is 18°C and sunny in Paris."

    recorded = [
        json.loads(line[6:])
        for line in transcript("reasoning_call").decode().splitlines()
        if line.startswith("data: ")
    ]
    done_items = [e["item"] for e in recorded if e["type"] == "response.output_item.done"]
    reasoning_item, call_item = done_items
    sent = server.bodies[1]["input"]
    assert sent == [
        {"role": "user", "content": [{"type": "input_text", "text": "Weather in Paris?"}]},
        {
            "type": "reasoning",
            "id": reasoning_item["id"],
            "summary": reasoning_item["summary"],
            "encrypted_content": reasoning_item["encrypted_content"],
        },
        {
            "type": "function_call",
            "call_id": call_item["call_id"],
            "name": "get_weather",
            "arguments": call_item["arguments"],
            "id": call_item["id"],
        },
        {"type": "function_call_output", "call_id": call_item["call_id"], "output": "18°C, sunny"},
    ]
    assert server.bodies[1]["include"] == ["reasoning.encrypted_content"]
    assert server.bodies[1]["store"] is False


async def test_full_payload_for_messages_tools_and_settings() -> None:
    # covers G-63, C9
    model, server = model_for(sse(transcript("text")))
    request = ModelRequest(
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(
                content=[
                    TextPart(text="Look:"),
                    ImagePart(url="https://example.com/cat.png"),
                    ImagePart(data="aGk=", media_type="image/jpeg"),
                    FilePart(data="JVBERg==", media_type="application/pdf", filename="a.pdf"),
                    FilePart(url="https://example.com/b.pdf", media_type="application/pdf"),
                ]
            ),
            AssistantMessage(
                parts=[
                    ReasoningPart(text="thinking", signature="sig-from-anthropic"),
                    TextPart(text="A cat."),
                ]
            ),
            UserMessage(content="And?"),
        ],
        tools=[WEATHER],
        settings=ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_tokens=256,
            tool_choice="get_weather",
            parallel_tool_calls=False,
            extra={"reasoning": {"effort": "low", "summary": "auto"}},
        ),
    )
    await model.request(request)
    assert server.bodies[0] == {
        "model": "gpt-4.1",
        "stream": True,
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "input": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": [
                    {"type": "input_text", "text": "Look:"},
                    {"type": "input_image", "image_url": "https://example.com/cat.png"},
                    {"type": "input_image", "image_url": "data:image/jpeg;base64,aGk="},
                    {
                        "type": "input_file",
                        "file_data": "data:application/pdf;base64,JVBERg==",
                        "filename": "a.pdf",
                    },
                    {"type": "input_file", "file_url": "https://example.com/b.pdf"},
                ],
            },
            {"role": "assistant", "content": [{"type": "output_text", "text": "A cat."}]},
            {"role": "user", "content": [{"type": "input_text", "text": "And?"}]},
        ],
        "tools": [
            {
                "type": "function",
                "name": "get_weather",
                "description": "Weather at a place.",
                "parameters": WEATHER.parameters,
                "strict": True,
            }
        ],
        "temperature": 0.2,
        "top_p": 0.9,
        "max_output_tokens": 256,
        "parallel_tool_calls": False,
        "tool_choice": {"type": "function", "name": "get_weather"},
        "reasoning": {"effort": "low", "summary": "auto"},
    }


async def test_non_reasoning_model_does_not_ask_for_encrypted_reasoning() -> None:
    # covers G-63: gpt-4.1 rejects include=reasoning.encrypted_content
    model, server = model_for(sse(transcript("text")), name="gpt-4.1")
    await model.request(
        ModelRequest(
            messages=[UserMessage(content="hi")], settings=ModelSettings(tool_choice="required")
        )
    )
    assert "include" not in server.bodies[0]
    assert server.bodies[0]["tool_choice"] == "required"


async def test_structured_output_sends_a_json_schema_format() -> None:
    # covers A-12, G-63
    schema = {
        "type": "object",
        "properties": {"name": {"type": "string"}},
        "required": ["name"],
        "additionalProperties": False,
    }
    model, server = model_for(sse(transcript("structured")))
    await model.request(
        ModelRequest(
            messages=[UserMessage(content="extract")],
            output=OutputSpec(name="event", json_schema=schema),
        )
    )
    assert server.bodies[0]["text"] == {
        "format": {"type": "json_schema", "name": "event", "schema": schema, "strict": True}
    }


async def test_text_and_tool_calls_of_an_assistant_turn_keep_their_order() -> None:
    # covers G-63, C9
    model, server = model_for(sse(transcript("text")))
    dotted = ToolDefinition(name="srv.lookup", description="d", parameters={})
    await model.request(
        ModelRequest(
            messages=[
                AssistantMessage(
                    parts=[TextPart(text="Let me look.")],
                    tool_calls=[ToolCall(id="call_1", name="srv.lookup", arguments='{"q":1}')],
                ),
                ToolMessage(
                    tool_call_id="call_1",
                    tool_name="srv.lookup",
                    content=[TextPart(text="found "), TextPart(text="it")],
                ),
            ],
            tools=[dotted],
        )
    )
    assert server.bodies[0]["input"] == [
        {"role": "assistant", "content": [{"type": "output_text", "text": "Let me look."}]},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "srv__lookup",
            "arguments": '{"q":1}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "found it"},
    ]


async def test_audio_input_is_refused_before_any_request() -> None:
    # covers G-63
    model, server = model_for()
    message = UserMessage(content=[AudioPart(data="AAAA", media_type="audio/wav")])
    with pytest.raises(UserError, match="does not take audio"):
        await model.request(ModelRequest(messages=[message]))
    assert server.bodies == []


async def test_extra_include_is_merged_with_encrypted_reasoning() -> None:
    # covers A-11, G-63
    model, server = model_for(sse(transcript("text")), name="o4-mini")
    settings = ModelSettings(extra={"include": ["message.output_text.logprobs"], "store": False})
    await model.request(ModelRequest(messages=[UserMessage(content="hi")], settings=settings))
    assert server.bodies[0]["include"] == [
        "reasoning.encrypted_content",
        "message.output_text.logprobs",
    ]


@pytest.mark.parametrize(
    ("choice", "wire"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("none", "none"),
        ("get_weather", {"type": "function", "name": "get_weather"}),
    ],
)
async def test_tool_choice_per_step_is_mapped(choice: str, wire: object) -> None:
    # auto / required / none / one named function
    model, server = model_for(sse(transcript("text")))
    settings = ModelSettings(tool_choice=choice)
    await model.request(
        ModelRequest(messages=[UserMessage(content="hi")], tools=[WEATHER], settings=settings)
    )
    assert server.bodies[0]["tool_choice"] == wire
