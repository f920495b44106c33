"""What Bastion sends over Chat Completions: request JSON, factories, an agent's tool loop."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.core import (
    AssistantMessage,
    AudioPart,
    AuthenticationFailed,
    FilePart,
    ImagePart,
    Message,
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
from bastion.providers import HttpModel, resolve_model
from bastion.providers.openai import (
    PRESETS,
    ChatCompletionsProtocol,
    openai_chat_model,
    openai_compatible_model,
)

from ._support import Recorder

ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "GROQ_API_KEY",
    "GROQ_BASE_URL",
    "OLLAMA_API_KEY",
    "OLLAMA_BASE_URL",
    "BASTION_ACME_BASE_URL",
    "BASTION_ACME_API_KEY",
    "ACME_BASE_URL",
)


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ENV:
        monkeypatch.delenv(name, raising=False)


def chat_model(recorder: Recorder, **kwargs: Any) -> HttpModel:
    kwargs.setdefault("api_key", "sk-test")
    return openai_chat_model("gpt-4.1-mini", http_client=recorder.client(), **kwargs)


def sse(*chunks: dict[str, Any]) -> bytes:
    lines = [b"data: " + json.dumps(c).encode() + b"\n\n" for c in chunks]
    return b"".join([*lines, b"data: [DONE]\n\n"])


def delta(**fields: Any) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": fields, "finish_reason": None}]}


def finished(reason: str) -> dict[str, Any]:
    return {"choices": [{"index": 0, "delta": {}, "finish_reason": reason}]}


async def test_exact_request_json_for_a_whole_conversation() -> None:
    # covers C9, G-63
    recorder = Recorder()
    model = chat_model(recorder, api_key="sk-test")
    messages: list[Message] = [
        SystemMessage(content="You are terse."),
        UserMessage(
            content=[
                TextPart(text="What is in these images?"),
                ImagePart(url="https://example.com/cat.png"),
                ImagePart(data="iVBORw0KGgo=", media_type="image/png"),
            ]
        ),
        AssistantMessage(
            parts=[ReasoningPart(text="Look it up.", signature="sig"), TextPart(text="Checking.")],
            tool_calls=[ToolCall(id="call_1", name="srv.lookup", arguments='{"q": "cat"}')],
        ),
        ToolMessage(tool_call_id="call_1", tool_name="srv.lookup", content="Two cats."),
    ]
    parameters = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}
    schema = {"type": "object", "properties": {"answer": {"type": "string"}}}
    request = ModelRequest(
        messages=messages,
        tools=[
            ToolDefinition(
                name="srv.lookup", description="Look up.", parameters=parameters, strict=True
            ),
            ToolDefinition(name="echo", description="Echo.", parameters={"type": "object"}),
        ],
        output=OutputSpec(name="final answer", json_schema=schema),
        settings=ModelSettings(
            temperature=0.2,
            top_p=0.9,
            max_tokens=256,
            stop=("END",),
            seed=7,
            tool_choice="srv.lookup",
            parallel_tool_calls=False,
            timeout=5.0,
        ),
    )
    response = await model.request(request)
    assert response.message.text == "ok"
    sent = recorder.requests[0]
    assert str(sent.url) == "https://api.openai.com/v1/chat/completions"
    assert sent.headers["authorization"] == "Bearer sk-test"
    assert recorder.json() == {
        "model": "gpt-4.1-mini",
        "messages": [
            {"role": "system", "content": "You are terse."},
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "What is in these images?"},
                    {"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                    {
                        "type": "image_url",
                        "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="},
                    },
                ],
            },
            {
                # Reasoning is dropped: Chat Completions has no field to carry it back.
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {"name": "srv__lookup", "arguments": '{"q": "cat"}'},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "Two cats."},
        ],
        "stream": True,
        "stream_options": {"include_usage": True},
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "srv__lookup",
                    "description": "Look up.",
                    "parameters": parameters,
                    "strict": True,
                },
            },
            {
                "type": "function",
                "function": {
                    "name": "echo",
                    "description": "Echo.",
                    "parameters": {"type": "object"},
                },
            },
        ],
        "response_format": {
            "type": "json_schema",
            "json_schema": {"name": "final_answer", "schema": schema, "strict": True},
        },
        "temperature": 0.2,
        "top_p": 0.9,
        "max_completion_tokens": 256,
        "stop": ["END"],
        "seed": 7,
        "tool_choice": {"type": "function", "function": {"name": "srv__lookup"}},
        "parallel_tool_calls": False,
    }


async def test_audio_file_and_tool_only_assistant_turns() -> None:
    # covers C9
    recorder = Recorder()
    messages: list[Message] = [
        UserMessage(
            content=[
                AudioPart(data="UklGRg==", media_type="audio/wav"),
                AudioPart(data="SUQz", media_type="audio/mpeg"),
                FilePart(data="JVBERi0=", media_type="application/pdf", filename="a.pdf"),
            ],
            name="alice",
        ),
        AssistantMessage(tool_calls=[ToolCall(id="c", name="echo", arguments="{}")]),
        ToolMessage(tool_call_id="c", tool_name="echo", content=[TextPart(text="done")]),
        AssistantMessage(parts=[TextPart(text="Done.")]),
    ]
    await chat_model(recorder).request(
        ModelRequest(messages=messages, settings=ModelSettings(tool_choice="required"))
    )
    body = recorder.json()
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}},
                {"type": "input_audio", "input_audio": {"data": "SUQz", "format": "mp3"}},
                {
                    "type": "file",
                    "file": {
                        "filename": "a.pdf",
                        "file_data": "data:application/pdf;base64,JVBERi0=",
                    },
                },
            ],
            "name": "alice",
        },
        {
            "role": "assistant",
            "content": "",  # never null: several compatible servers answer 500 to it
            "tool_calls": [
                {"id": "c", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
            ],
        },
        {"role": "tool", "tool_call_id": "c", "content": [{"type": "text", "text": "done"}]},
        {"role": "assistant", "content": "Done."},
    ]
    # Without tools, OpenAI rejects tool_choice, so it is not sent.
    assert "tool_choice" not in body
    assert "tools" not in body
    assert recorder.requests[0].headers["authorization"] == "Bearer sk-test"


@pytest.mark.parametrize(
    ("message", "words"),
    [
        (UserMessage(content=[AudioPart(url="https://x/a.wav")]), "audio inline only"),
        (UserMessage(content=[AudioPart(data="AA==", media_type="audio/ogg")]), "wav or mp3"),
        (
            UserMessage(content=[FilePart(url="https://x/a.pdf", media_type="application/pdf")]),
            "files inline only",
        ),
        (UserMessage(content=[ImagePart()]), "neither 'data' nor 'url'"),
        (AssistantMessage(parts=[ImagePart(url="https://x/i.png")]), "text and tool calls"),
        (
            ToolMessage(tool_call_id="c", tool_name="t", content=[ImagePart(url="https://x")]),
            "take text only",
        ),
        (UserMessage(content=["plain string in a part list"]), "cannot take the user part"),  # pyright: ignore[reportArgumentType]
        ("not a message", "expected a SystemMessage"),
    ],
)
async def test_unsupported_content_is_a_user_error_before_sending(message: Any, words: str) -> None:
    #
    recorder = Recorder()
    with pytest.raises(UserError, match=words):
        await chat_model(recorder).request(ModelRequest(messages=[message]))
    assert recorder.requests == []


def test_protocol_facts() -> None:
    #
    protocol = ChatCompletionsProtocol()
    assert (protocol.vendor, protocol.framing) == ("openai", "sse")
    assert protocol.default_base_url == "https://api.openai.com/v1"
    assert protocol.api_key_env == "OPENAI_API_KEY"
    assert protocol.path("gpt-4.1") == "/chat/completions"
    assert "Authorization" not in protocol.headers(None)
    assert protocol.headers("k")["Authorization"] == "Bearer k"


async def test_key_from_environment_and_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    #
    monkeypatch.setenv("OPENAI_API_KEY", "sk-env")
    recorder = Recorder()
    model = openai_chat_model("gpt-4.1-mini", http_client=recorder.client())
    assert model.key == "openai:gpt-4.1-mini"
    await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert recorder.requests[0].headers["authorization"] == "Bearer sk-env"
    resolved = resolve_model("openai:gpt-4.1")
    assert isinstance(resolved, HttpModel)
    assert resolved.key == "openai:gpt-4.1"
    compatible = resolve_model("openai-compatible:ollama:llama3.2:3b")
    assert isinstance(compatible, HttpModel)
    assert (compatible.key, compatible.base_url) == (
        "ollama:llama3.2:3b",
        "http://localhost:11434/v1",
    )


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_compatible_presets(preset: str, monkeypatch: pytest.MonkeyPatch) -> None:
    #
    base_url, key_env = PRESETS[preset].base_url, PRESETS[preset].api_key_env
    assert key_env is not None
    monkeypatch.setenv(key_env, "sk-preset")
    recorder = Recorder()
    model = openai_compatible_model(f"{preset}:some-model", http_client=recorder.client())
    assert model.provider == preset
    assert model.name == "some-model"
    await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert str(recorder.requests[0].url) == f"{base_url}/chat/completions"
    assert recorder.requests[0].headers["authorization"] == "Bearer sk-preset"
    assert recorder.json()["model"] == "some-model"


async def test_custom_compatible_endpoint(monkeypatch: pytest.MonkeyPatch) -> None:
    #
    with pytest.raises(UserError, match="BASTION_ACME_BASE_URL"):
        openai_compatible_model("acme:m1")
    monkeypatch.setenv("BASTION_ACME_BASE_URL", "https://llm.acme.test/v1/")
    monkeypatch.setenv("BASTION_ACME_API_KEY", "sk-acme")
    recorder = Recorder()
    model = openai_compatible_model("acme:m1", http_client=recorder.client())
    assert model.key == "acme:m1"
    await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert str(recorder.requests[0].url) == "https://llm.acme.test/v1/chat/completions"
    assert recorder.requests[0].headers["authorization"] == "Bearer sk-acme"
    explicit = openai_compatible_model("other:m2", base_url="http://h/v1")
    assert explicit.base_url == "http://h/v1"


@pytest.mark.parametrize("spec", ["groq", "groq:", ":model", ""])
def test_malformed_compatible_spec(spec: str) -> None:
    #
    with pytest.raises(UserError, match="<preset>:<model>"):
        openai_compatible_model(spec)


async def test_agent_runs_a_tool_loop_over_chat_completions() -> None:
    # covers, C2, C3, C9
    @tool(name="math.add", side_effect_class="pure")
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    call = {"index": 0, "id": "call_1", "type": "function"}
    recorder = Recorder(
        sse(
            delta(role="assistant", content=None),
            delta(tool_calls=[{**call, "function": {"name": "math__add", "arguments": ""}}]),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '{"a": 2, '}}]),
            delta(tool_calls=[{"index": 0, "function": {"arguments": '"b": 3}'}}]),
            finished("tool_calls"),
            {"choices": [], "usage": {"prompt_tokens": 50, "completion_tokens": 10}},
        ),
        sse(
            delta(role="assistant", content="2 + 3 = "),
            delta(content="5."),
            finished("stop"),
            {"choices": [], "usage": {"prompt_tokens": 70, "completion_tokens": 5}},
        ),
    )
    model = openai_chat_model("gpt-4.1-mini", api_key="sk-test", http_client=recorder.client())
    agent = Agent("calc", model=model, instructions="Use the tool.", tools=[add])
    result = await agent.run("What is 2 + 3?")
    assert result.status == "completed"
    assert result.output == "2 + 3 = 5."
    assert [c.name for c in result.tool_calls] == ["math.add"]
    assert (result.usage.prompt_tokens, result.usage.completion_tokens) == (120, 15)
    assert result.usage.requests == 2
    first, second = recorder.json(0), recorder.json(1)
    assert first["tools"][0]["function"]["name"] == "math__add"
    assert first["messages"] == [
        {"role": "system", "content": "Use the tool."},
        {"role": "user", "content": "What is 2 + 3?"},
    ]
    assert second["messages"][2] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "math__add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    }
    assert second["messages"][3]["role"] == "tool"
    assert second["messages"][3]["tool_call_id"] == "call_1"
    assert "5" in second["messages"][3]["content"]


def test_public_names_are_pinned() -> None:
    #
    import bastion.providers.openai as package

    assert package.__all__ == [
        "GENERIC",
        "OPENAI",
        "PRESETS",
        "ChatCompletionsParser",
        "ChatCompletionsProtocol",
        "ChatParams",
        "HttpModelOptions",
        "Preset",
        "PresetVariables",
        "openai_chat_model",
        "openai_compatible_model",
        "preset_variables",
    ]


async def test_a_missing_key_for_a_hosted_api_names_the_variable_before_sending(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    recorder = Recorder(sse(delta(content="hi")))
    model = openai_chat_model("gpt-4.1-mini", http_client=recorder.client())
    with pytest.raises(AuthenticationFailed, match="set OPENAI_API_KEY") as info:
        await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert not info.value.retryable
    assert recorder.requests == []  # nothing was sent
    local = openai_chat_model(
        "llama", base_url="http://localhost:8000/v1", http_client=recorder.client()
    )
    response = await local.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert response.message.text == "hi"  # a self-hosted server may take no key
