"""Ollama's native API as servers really answer: whole answers, errors, thinking round-trip."""

from __future__ import annotations

import json

import pytest

from bastion.core import (
    BadRequest,
    ModelRequest,
    ModelSettings,
    Overloaded,
    RateLimited,
    ReasoningPart,
    TextPart,
    ToolDefinition,
    UserError,
    UserMessage,
)

from ._support import Recorder, ask, model_with, transcript

WEATHER = ToolDefinition(name="get_weather", description="Weather.", parameters={"type": "object"})
# What /api/chat answers with "stream": false (Ollama's API reference): the final line alone,
# the whole message in it.
WHOLE = {
    "model": "qwen3:8b",
    "created_at": "2025-06-02T10:00:00.000000Z",
    "message": {
        "role": "assistant",
        "content": "",
        "thinking": "Need the weather for Paris.",
        "tool_calls": [{"function": {"name": "get_weather", "arguments": {"city": "Paris"}}}],
    },
    "done_reason": "stop",
    "done": True,
    "total_duration": 4883583458,
    "load_duration": 1334875,
    "prompt_eval_count": 26,
    "prompt_eval_duration": 342546000,
    "eval_count": 282,
    "eval_duration": 4535599000,
}


async def test_stream_false_is_sent_and_the_whole_answer_parses_like_a_stream() -> None:
    # covers G-09
    recorder = Recorder(json.dumps(WHOLE, indent=2).encode(), content_type="application/json")
    request = ModelRequest(
        messages=[UserMessage(content="Weather?")],
        tools=[WEATHER],
        settings=ModelSettings(stream=False),
    )
    response = await model_with(recorder, "qwen3:8b").request(request)
    assert recorder.json()["stream"] is False
    assert response.message.parts == [ReasoningPart(text="Need the weather for Paris.")]
    [call] = response.message.tool_calls
    assert (call.name, json.loads(call.arguments)) == ("get_weather", {"city": "Paris"})
    assert response.finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (26, 282)
    assert response.usage.unreported_requests == 0


async def test_thinking_goes_back_on_the_next_step() -> None:
    # covers G-09, G-63
    recorder = Recorder(transcript("thinking.ndjson"), transcript("text.ndjson"))
    model = model_with(recorder, "deepseek-r1")
    first = await model.request(ask("How many r's in strawberry?"))
    assert isinstance(first.message.parts[0], ReasoningPart)
    history = [UserMessage(content="How many r's in strawberry?"), first.message]
    await model.request(ModelRequest(messages=[*history, UserMessage(content="Sure?")]))
    sent = recorder.json(1)["messages"][1]
    assert sent["thinking"] == first.message.parts[0].text
    assert sent["content"] == "".join(
        p.text for p in first.message.parts if isinstance(p, TextPart)
    )


async def test_http_500_about_the_request_is_a_bad_request() -> None:
    body = b'{"error":"json: cannot unmarshal string into Go struct field ChatRequest.messages"}'
    recorder = Recorder(body, status=500, content_type="application/json")
    with pytest.raises(BadRequest) as caught:
        await model_with(recorder).request(ask())
    assert caught.value.retryable is False
    assert caught.value.status == 500
    # A crash of the runner stays a retryable outage.
    recorder = Recorder(transcript("error_500.json"), status=500, content_type="application/json")
    with pytest.raises(Overloaded):
        await model_with(recorder).request(ask())


@pytest.mark.parametrize(
    ("line", "error_class"),
    [
        ({"error": "rate limit exceeded", "status_code": 429}, RateLimited),
        ({"error": "bad value for temperature", "status_code": 400}, BadRequest),
        ({"error": "invalid message role: robot"}, BadRequest),
        ({"error": "llama runner process has terminated"}, Overloaded),
    ],
)
async def test_stream_error_lines_are_classified_by_status_then_message(
    line: dict[str, object], error_class: type[Exception]
) -> None:
    body = (json.dumps(line) + "\n").encode()
    with pytest.raises(error_class):
        await model_with(Recorder(body)).request(ask())


async def test_tool_choice_naming_an_unoffered_tool_is_a_user_error() -> None:
    recorder = Recorder(transcript("text.ndjson"))
    request = ModelRequest(
        messages=[UserMessage(content="go")],
        tools=[WEATHER],
        settings=ModelSettings(tool_choice="clock"),
    )
    with pytest.raises(UserError, match=r"'clock'.*Offered: 'get_weather'"):
        await model_with(recorder).request(request)
    assert recorder.requests == []


async def test_no_counts_on_the_final_line_reads_as_not_reported() -> None:
    #
    body = b'{"model":"m","message":{"role":"assistant","content":"hi"},"done":true}\n'
    response = await model_with(Recorder(body)).request(ask())
    assert response.usage.unreported_requests == 1
    assert response.usage.requests == 1


async def test_reasoning_effort_is_sent_as_think() -> None:
    recorder = Recorder(transcript("text.ndjson"))
    settings = ModelSettings(extra={"reasoning_effort": "low"})
    await model_with(recorder, "gpt-oss:20b").request(
        ModelRequest(messages=[UserMessage(content="go")], settings=settings)
    )
    body = recorder.json()
    assert body["think"] == "low"
    assert "reasoning_effort" not in body
