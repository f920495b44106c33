"""Requests to Ollama's ``/api/chat``: the exact JSON body, headers and base URL.

SPEC G-09 (local Ollama adapter), C9 (tool names on the wire).
"""

from __future__ import annotations

import pytest

from bastion.core import (
    AssistantMessage,
    AudioPart,
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
from bastion.providers.ollama import OllamaChatProtocol, ollama_base_url

from ._support import Recorder, ask, model_with, transcript

WEATHER = ToolDefinition(
    name="srv.weather",
    description="Get the current weather for a city.",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}},
        "required": ["city"],
    },
)
SCHEMA = {
    "type": "object",
    "properties": {"age": {"type": "integer"}, "available": {"type": "boolean"}},
    "required": ["age", "available"],
}


async def test_conversation_request_body_is_exact() -> None:
    # covers G-09, C9
    request = ModelRequest(
        messages=[
            SystemMessage(content="Be brief."),
            UserMessage(
                content=[
                    TextPart(text="What is in this picture? "),
                    TextPart(text="And the weather in Paris?"),
                    ImagePart(data="iVBORw0KGgo=", media_type="image/png"),
                ]
            ),
            AssistantMessage(
                parts=[ReasoningPart(text="Need the weather."), TextPart(text="Checking.")],
                tool_calls=[
                    ToolCall(id="call_1", name="srv.weather", arguments='{"city": "Paris"}')
                ],
            ),
            ToolMessage(tool_call_id="call_1", tool_name="srv.weather", content="22°C, sunny"),
        ],
        tools=[WEATHER],
        output=OutputSpec(name="answer", json_schema=SCHEMA),
        settings=ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_tokens=256,
            stop=("\n\n",),
            seed=7,
            extra={"think": True, "keep_alive": "5m", "options": {"num_ctx": 8192}},
        ),
    )
    recorder = Recorder(transcript("structured.ndjson"))
    await model_with(recorder, "qwen2.5:7b-instruct").request(request)
    sent = recorder.requests[0]
    assert sent.method == "POST"
    assert str(sent.url) == "http://localhost:11434/api/chat"
    assert "authorization" not in sent.headers
    assert recorder.json() == {
        "model": "qwen2.5:7b-instruct",
        "messages": [
            {"role": "system", "content": "Be brief."},
            {
                "role": "user",
                "content": "What is in this picture? And the weather in Paris?",
                "images": ["iVBORw0KGgo="],
            },
            {
                "role": "assistant",
                "content": "Checking.",
                "thinking": "Need the weather.",
                "tool_calls": [
                    {"function": {"name": "srv__weather", "arguments": {"city": "Paris"}}}
                ],
            },
            {"role": "tool", "tool_name": "srv__weather", "content": "22°C, sunny"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "srv__weather",
                    "description": "Get the current weather for a city.",
                    "parameters": WEATHER.parameters,
                },
            }
        ],
        "format": SCHEMA,
        "options": {
            "temperature": 0.2,
            "top_p": 0.9,
            "num_predict": 256,
            "stop": ["\n\n"],
            "seed": 7,
            "num_ctx": 8192,
        },
        "think": True,
        "keep_alive": "5m",
        "stream": True,
    }


async def test_minimal_request_has_no_optional_keys() -> None:
    # covers G-09
    recorder = Recorder(transcript("text.ndjson"))
    await model_with(recorder).request(ask("Hi"))
    assert recorder.json() == {
        "model": "llama3.2",
        "messages": [{"role": "user", "content": "Hi"}],
        "stream": True,
    }


@pytest.mark.parametrize(
    ("arguments", "sent"),
    [("", {}), ("not json", {}), ("[1]", {}), ('{"a": [1]}', {"a": [1]})],
)
async def test_tool_call_arguments_are_sent_as_an_object(arguments: str, sent: object) -> None:
    # covers G-09
    history = [
        UserMessage(content="go"),
        AssistantMessage(tool_calls=[ToolCall(id="c", name="f", arguments=arguments)]),
        ToolMessage(tool_call_id="c", tool_name="f", content="bad arguments", is_error=True),
    ]
    recorder = Recorder(transcript("text.ndjson"))
    await model_with(recorder).request(ModelRequest(messages=history))
    assert recorder.json()["messages"][1]["tool_calls"][0]["function"]["arguments"] == sent


@pytest.mark.parametrize(
    ("choice", "names"),
    [("auto", ["srv__weather", "other"]), ("none", None), ("other", ["other"])],
)
async def test_tool_choice(choice: str, names: list[str] | None) -> None:
    # covers G-09
    other = ToolDefinition(name="other", description="Other.", parameters={"type": "object"})
    request = ModelRequest(
        messages=[UserMessage(content="go")],
        tools=[WEATHER, other],
        settings=ModelSettings(tool_choice=choice),
    )
    recorder = Recorder(transcript("text.ndjson"))
    await model_with(recorder).request(request)
    tools = recorder.json().get("tools")
    assert (None if tools is None else [t["function"]["name"] for t in tools]) == names


async def test_data_url_image_is_sent_as_raw_base64() -> None:
    # covers G-09
    image = ImagePart(url="data:image/png;base64,iVBORw0KGgo=")
    recorder = Recorder(transcript("text.ndjson"))
    await model_with(recorder).request(ModelRequest(messages=[UserMessage(content=[image])]))
    assert recorder.json()["messages"] == [
        {"role": "user", "content": "", "images": ["iVBORw0KGgo="]}
    ]


@pytest.mark.parametrize(
    ("part", "message"),
    [
        (ImagePart(url="https://example.com/cat.png"), "cannot fetch images by URL"),
        (AudioPart(data="AAAA", media_type="audio/wav"), "text and images only"),
    ],
)
async def test_unsupported_content_is_a_user_error_before_any_request(
    part: ImagePart | AudioPart, message: str
) -> None:
    # covers G-09
    recorder = Recorder()
    with pytest.raises(UserError, match=message):
        await model_with(recorder).request(ModelRequest(messages=[UserMessage(content=[part])]))
    assert recorder.requests == []


async def test_api_key_is_sent_as_bearer_token() -> None:
    # covers G-09
    recorder = Recorder(transcript("text.ndjson"))
    await model_with(recorder, api_key="secret-token").request(ask())
    assert recorder.requests[0].headers["authorization"] == "Bearer secret-token"


@pytest.mark.parametrize(
    ("host", "url"),
    [
        ("", "http://localhost:11434"),
        ("0.0.0.0:11435", "http://0.0.0.0:11435"),
        ("gpu-box", "http://gpu-box:11434"),
        ("https://ollama.example.com/", "https://ollama.example.com"),
        ("[::1]:9000", "http://[::1]:9000"),
        ("proxy:8080/ollama/", "http://proxy:8080/ollama"),
    ],
)
def test_ollama_host_values(host: str, url: str) -> None:
    # covers G-09
    assert ollama_base_url(host) == url


async def test_ollama_host_environment_variable_sets_the_base_url(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # covers G-09
    monkeypatch.setenv("OLLAMA_HOST", "10.0.0.5:11434")
    monkeypatch.delenv("OLLAMA_BASE_URL", raising=False)
    recorder = Recorder(transcript("text.ndjson"))
    model = model_with(recorder)
    assert OllamaChatProtocol().default_base_url == "http://10.0.0.5:11434"
    await model.request(ask())
    assert str(recorder.requests[0].url) == "http://10.0.0.5:11434/api/chat"


def test_explicit_base_url_wins_over_ollama_host(monkeypatch: pytest.MonkeyPatch) -> None:
    # covers G-09
    monkeypatch.setenv("OLLAMA_HOST", "10.0.0.5:11434")
    assert model_with(Recorder(), base_url="http://box:1/").base_url == "http://box:1"
