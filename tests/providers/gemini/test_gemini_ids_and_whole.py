"""Function-call ids (Gemini's kept, Bastion's unique per run), ``generateContent``, usage.

SPEC G-63 (ids and signatures round-trip), A-09 (whole answers), A-11, A-12, C2.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.core import (
    BadRequest,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    RateLimited,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

from ._support import model_for, transcript

WEATHER = ToolDefinition(name="get_weather", description="Weather.", parameters={})
ASK = ModelRequest(messages=[UserMessage(content="Paris and Tokyo?")], tools=[WEATHER])
WHOLE = ModelSettings(stream=False)


@tool(side_effect_class="pure")
def get_weather(city: str) -> str:
    """Weather for a city."""
    return f"18°C in {city}"


async def test_vendor_ids_are_kept_and_sent_back_with_the_results() -> None:
    # covers G-63
    model, server = model_for("function_call_ids.sse", "text.sse", name="gemini-3-pro-preview")
    response = await model.request(ASK)
    first, second = response.message.tool_calls
    assert (first.id, second.id) == ("8xk2c7q1", "m3v9z0d4")
    results = [
        ToolMessage(tool_call_id=c.id, tool_name=c.name, content=f"{n}°C")
        for n, c in zip((18, 25), (first, second), strict=True)
    ]
    await model.request(
        ModelRequest(messages=[*ASK.messages, response.message, *results], tools=[WEATHER])
    )
    assert server.body(1)["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {
                        "id": "8xk2c7q1",
                        "name": "get_weather",
                        "args": {"city": "Paris"},
                    },
                    "thoughtSignature": "Cs4BAdHtim/gemini3+first/call==",
                },
                {
                    "functionCall": {
                        "id": "m3v9z0d4",
                        "name": "get_weather",
                        "args": {"city": "Tokyo"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "id": "8xk2c7q1",
                        "name": "get_weather",
                        "response": {"result": "18°C"},
                    }
                },
                {
                    "functionResponse": {
                        "id": "m3v9z0d4",
                        "name": "get_weather",
                        "response": {"result": "25°C"},
                    }
                },
            ],
        },
    ]


async def test_made_up_ids_are_unique_across_steps_and_never_sent() -> None:
    # the old call_1 of every step collided in the journal and the results
    model, server = model_for("function_call.sse", "function_call.sse", "text.sse")
    agent = Agent("weather", model=model, tools=[get_weather])
    result = await agent.run("Weather in Paris, twice?")
    result.raise_for_status()
    ids = [call.id for call in result.tool_calls]
    assert len(ids) == 2
    assert len(set(ids)) == 2
    sent = json.dumps(server.body(2))
    assert not any(call_id in sent for call_id in ids)  # Gemini never saw them


def normalised(response: ModelResponse) -> ModelResponse:
    for n, call in enumerate(response.message.tool_calls):
        if call.provider_details is None or "id" not in call.provider_details:
            call.id = f"local_{n}"  # made-up ids are random
    return response


@pytest.mark.parametrize(
    ("stream", "whole"),
    [
        ("function_call_ids.sse", "function_call_ids.json"),
        ("two_function_calls.sse", None),
        ("thought_function_call.sse", None),
        ("text.sse", None),
        ("usage.sse", None),
    ],
)
async def test_generate_content_gives_what_the_stream_gives(stream: str, whole: str | None) -> None:
    #
    streamed, _ = model_for(stream)
    expected = normalised(await streamed.request(ASK))
    body = transcript(whole) if whole else merged(transcript(stream))
    model, server = model_for((200, body))
    answer = normalised(
        await model.request(ModelRequest(messages=ASK.messages, tools=ASK.tools, settings=WHOLE))
    )
    assert answer == expected
    assert str(server.requests[0].url) == (
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    )
    assert server.requests[0].headers["accept"] == "application/json"


def merged(sse: bytes) -> bytes:
    """One ``generateContent`` answer from a stream: the parts in order, the last metadata."""
    events = [
        json.loads(line[6:]) for line in sse.decode().splitlines() if line.startswith("data: ")
    ]
    parts: list[Any] = [p for e in events for p in e["candidates"][0]["content"]["parts"]]
    whole: dict[str, Any] = {**events[-1]}
    whole["candidates"] = [
        {**events[-1]["candidates"][0], "content": {"parts": parts, "role": "model"}}
    ]
    return json.dumps(whole).encode()


async def test_audio_tokens_come_from_the_modality_details() -> None:
    # covers A-12, C2
    model, _ = model_for("audio_usage.sse")
    usage = (await model.request(ASK)).usage
    assert (usage.audio_input_tokens, usage.audio_output_tokens) == (400, 90)
    assert (usage.prompt_tokens, usage.completion_tokens) == (412, 96)


async def test_no_usage_metadata_reads_as_not_reported() -> None:
    # covers A-12, C2
    body = json.loads(transcript("function_call_ids.json"))
    del body["usageMetadata"]
    model, _ = model_for((200, json.dumps(body).encode()))
    usage = (await model.request(ModelRequest(messages=ASK.messages, settings=WHOLE))).usage
    assert (usage.requests, usage.unreported_requests, usage.cost_usd) == (1, 1, None)


async def test_500_whose_body_is_invalid_argument_is_a_bad_request() -> None:
    #
    error = {
        "error": {"code": 400, "message": "Invalid JSON payload.", "status": "INVALID_ARGUMENT"}
    }
    model, _ = model_for((500, json.dumps(error).encode()))
    with pytest.raises(BadRequest) as caught:
        await model.request(ASK)
    assert not caught.value.retryable


@pytest.mark.parametrize(
    ("status", "code", "expected", "retryable"),
    [
        ("RESOURCE_EXHAUSTED", 429, RateLimited, True),
        ("INVALID_ARGUMENT", 400, BadRequest, False),
    ],
)
async def test_an_error_inside_a_200_stream_is_classified_by_its_status(
    status: str, code: int, expected: type[Exception], retryable: bool
) -> None:
    #
    error: dict[str, Any] = {"code": code, "message": "stop", "status": status}
    if code == 429:
        error["details"] = [
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "7s"}
        ]
    first = transcript("text.sse").split(b"\n\n")[0]
    body = first + b"\n\ndata: " + json.dumps({"error": error}).encode() + b"\n\n"
    model, _ = model_for((200, body))
    with pytest.raises(expected) as caught:
        await model.request(ASK)
    assert getattr(caught.value, "retryable", None) is retryable
    if code == 429:
        assert getattr(caught.value, "retry_after", None) == 7.0
