"""OpenAI-compatible servers as they really behave: profiles, variables, errors, reasoning.

Request bodies are asserted field by field against each vendor's public API reference;
answers replay the transcripts in ``tests/providers/transcripts/openai/`` (shapes from the
vendors' references: OpenRouter ``reasoning_details`` and mid-stream errors, Mistral typed
content chunks, DeepSeek thinking mode, vLLM's error object, llama-server's HTTP 500).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from bastion.core import (
    AssistantMessage,
    BadRequest,
    ContextLengthExceeded,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    OutputSpec,
    Overloaded,
    RateLimited,
    ReasoningPart,
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
    ChatParams,
    openai_chat_model,
    openai_compatible_model,
    preset_variables,
)

from ._support import TEXT_SSE, Recorder

TRANSCRIPTS = Path(__file__).parent.parent / "transcripts" / "openai"
WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather at a place.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)
CLOCK = ToolDefinition(name="clock", description="The time.", parameters={"type": "object"})


@pytest.fixture(autouse=True)
def clean_env(monkeypatch: pytest.MonkeyPatch) -> None:
    import os

    for name in list(os.environ):
        if name.endswith(("_BASE_URL", "_API_KEY")) or name == "OLLAMA_HOST":
            monkeypatch.delenv(name, raising=False)


def compat(spec: str, server: Recorder, **kwargs: Any) -> HttpModel:
    return openai_compatible_model(spec, api_key="k", http_client=server.client(), **kwargs)


def transcript(name: str) -> bytes:
    return (TRANSCRIPTS / name).read_bytes()


def tool_turn(content: str = "") -> list[Any]:
    return [
        UserMessage(content="Weather in Paris?"),
        AssistantMessage(
            parts=[TextPart(text=content)] if content else [],
            tool_calls=[ToolCall(id="c1", name="get_weather", arguments='{"location":"Paris"}')],
        ),
        ToolMessage(tool_call_id="c1", tool_name="get_weather", content="18C"),
    ]


# ---- item 1: assistant tool-call turns never carry content: null to compatible servers ----


@pytest.mark.parametrize(
    ("spec", "expected"),
    [
        ("vllm:m", {"content": ""}),
        ("llamacpp:m", {"content": ""}),
        ("lmstudio:m", {"content": ""}),
        ("ollama:m", {"content": ""}),
        ("groq:m", {"content": ""}),
        ("openrouter:m", {}),
        ("mistral:m", {"content": ""}),
        ("deepseek:m", {"content": ""}),
        ("acme:m", {"content": ""}),
    ],
)
async def test_tool_call_turn_content_is_what_each_server_accepts(
    spec: str, expected: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BASTION_ACME_BASE_URL", "http://acme/v1")
    server = Recorder()
    await compat(spec, server).request(ModelRequest(messages=tool_turn(), tools=[WEATHER]))
    assistant = server.json()["messages"][1]
    assert {k: v for k, v in assistant.items() if k == "content"} == expected
    assert assistant["tool_calls"][0]["id"] == "c1"
    # A turn with text keeps its text everywhere.
    server = Recorder()
    messages = tool_turn("Checking.")
    await compat(spec, server).request(ModelRequest(messages=messages, tools=[WEATHER]))
    assert server.json()["messages"][1]["content"] == "Checking."


# ---- item 2: per-vendor parameter profiles ----

SETTINGS = ModelSettings(
    max_tokens=256, seed=7, parallel_tool_calls=False, extra={"reasoning_effort": "low"}
)


def _fields(body: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "max_tokens",
        "max_completion_tokens",
        "stream_options",
        "seed",
        "random_seed",
        "parallel_tool_calls",
        "reasoning_effort",
        "reasoning",
    )
    return {k: body[k] for k in keys if k in body}


USAGE = {"stream_options": {"include_usage": True}}
PROFILE_CASES: dict[str, dict[str, Any]] = {
    # OpenAI: max_completion_tokens (max_tokens is refused by its reasoning models).
    "openai": {"max_completion_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
               "reasoning_effort": "low"},
    "openrouter": {"max_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
                   "reasoning": {"effort": "low"}},
    "deepseek": {"max_tokens": 256, **USAGE, "reasoning_effort": "low"},
    "mistral": {"max_tokens": 256, "random_seed": 7, "parallel_tool_calls": False,
                "reasoning_effort": "low"},
    "groq": {"max_completion_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
             "reasoning_effort": "low"},
    "together": {"max_tokens": 256, "seed": 7, "reasoning_effort": "low"},
    "fireworks": {"max_tokens": 256, "seed": 7, "reasoning_effort": "low"},
    "xai": {"max_completion_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
            "reasoning_effort": "low"},
    "cerebras": {"max_completion_tokens": 256, "seed": 7, "parallel_tool_calls": False,
                 "reasoning_effort": "low"},
    "vllm": {"max_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
             "reasoning_effort": "low"},
    "llamacpp": {"max_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
                 "reasoning_effort": "low"},
    "lmstudio": {"max_tokens": 256, "seed": 7, "reasoning_effort": "low"},
    "ollama": {"max_tokens": 256, **USAGE, "seed": 7, "reasoning_effort": "low"},
    # An unknown server: the fields nearly every compatible server accepts.
    "acme": {"max_tokens": 256, **USAGE, "seed": 7, "parallel_tool_calls": False,
             "reasoning_effort": "low"},
}  # fmt: skip


@pytest.mark.parametrize("vendor", sorted(PROFILE_CASES))
async def test_each_vendor_gets_the_parameters_its_reference_accepts(
    vendor: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BASTION_ACME_BASE_URL", "http://acme/v1")
    server = Recorder()
    if vendor == "openai":
        model = openai_chat_model("m", api_key="k", http_client=server.client())
    else:
        model = compat(f"{vendor}:m", server)
    request = ModelRequest(messages=[UserMessage(content="hi")], tools=[WEATHER], settings=SETTINGS)
    await model.request(request)
    assert _fields(server.json()) == PROFILE_CASES[vendor]


def test_every_preset_has_a_profile_case() -> None:
    assert set(PRESETS) | {"openai", "acme"} == set(PROFILE_CASES)


@pytest.mark.parametrize(
    ("vendor", "expected"),
    [
        ("openrouter", "json_schema"),
        ("vllm", "json_schema"),
        ("mistral", "json_schema"),
        ("deepseek", "json_object"),
    ],
)
async def test_structured_output_uses_json_schema_or_json_object(
    vendor: str, expected: str
) -> None:
    #
    server = Recorder()
    output = OutputSpec(name="city info", json_schema={"type": "object", "required": ["name"]})
    await compat(f"{vendor}:m", server).request(
        ModelRequest(messages=[UserMessage(content="Paris?")], output=output)
    )
    body = server.json()
    assert body["response_format"]["type"] == expected
    if expected == "json_schema":
        assert body["response_format"]["json_schema"]["name"] == "city_info"
        assert len(body["messages"]) == 1
    else:
        # JSON mode checks only "is JSON": the schema is stated in a system message.
        assert body["messages"][-1] == {
            "role": "system",
            "content": "Answer with one JSON object that matches this JSON schema: "
            '{"type":"object","required":["name"]}',
        }


async def test_groq_never_receives_message_names() -> None:
    server = Recorder()
    message = UserMessage(content="hi", name="alice")
    await compat("groq:m", server).request(ModelRequest(messages=[message]))
    assert server.json()["messages"] == [{"role": "user", "content": "hi"}]
    server = Recorder()
    await compat("vllm:m", server).request(ModelRequest(messages=[message]))
    assert server.json()["messages"] == [{"role": "user", "content": "hi", "name": "alice"}]


async def test_params_override_the_preset_profile() -> None:
    server = Recorder()
    model = compat("vllm:m", server, params=ChatParams(stream_usage=False, seed=None))
    settings = ModelSettings(seed=3)
    await model.request(ModelRequest(messages=[UserMessage(content="hi")], settings=settings))
    assert "stream_options" not in server.json()
    assert "seed" not in server.json()


# ---- item 8: tool_choice per step, as each server accepts it ----


@pytest.mark.parametrize(
    ("vendor", "choice", "tool_choice", "tools"),
    [
        ("vllm", "auto", "auto", ["get_weather", "clock"]),
        ("vllm", "required", "required", ["get_weather", "clock"]),
        ("vllm", "none", "none", ["get_weather", "clock"]),
        (
            "vllm",
            "clock",
            {"type": "function", "function": {"name": "clock"}},
            ["get_weather", "clock"],
        ),
        ("mistral", "clock", {"type": "function", "function": {"name": "clock"}}, None),
        # llama-server treats a named choice as "auto": offer that tool alone, required.
        ("llamacpp", "clock", "required", ["clock"]),
        ("lmstudio", "clock", "required", ["clock"]),
        ("ollama", "clock", "required", ["clock"]),
        ("llamacpp", "none", "none", ["get_weather", "clock"]),
    ],
)
async def test_tool_choice_is_mapped_per_server(
    vendor: str, choice: str, tool_choice: object, tools: list[str] | None
) -> None:
    server = Recorder()
    settings = ModelSettings(tool_choice=choice)
    request = ModelRequest(
        messages=[UserMessage(content="hi")], tools=[WEATHER, CLOCK], settings=settings
    )
    await compat(f"{vendor}:m", server).request(request)
    body = server.json()
    assert body["tool_choice"] == tool_choice
    if tools is not None:
        assert [t["function"]["name"] for t in body["tools"]] == tools


async def test_tool_choice_naming_an_unoffered_tool_is_a_user_error() -> None:
    server = Recorder()
    settings = ModelSettings(tool_choice="nope")
    request = ModelRequest(messages=[UserMessage(content="hi")], tools=[WEATHER], settings=settings)
    with pytest.raises(UserError, match=r"'nope'.*Offered: 'get_weather'"):
        await compat("vllm:m", server).request(request)
    assert server.requests == []  # refused before anything was sent


async def test_tool_choice_is_left_out_without_tools() -> None:
    server = Recorder()
    settings = ModelSettings(tool_choice="required", parallel_tool_calls=True)
    await compat("vllm:m", server).request(
        ModelRequest(messages=[UserMessage(content="hi")], settings=settings)
    )
    assert "tool_choice" not in server.json()
    assert "parallel_tool_calls" not in server.json()


# ---- item 3: one variable convention for every preset ----


@pytest.mark.parametrize("preset", sorted(PRESETS))
async def test_bastion_base_url_and_key_variables_work_for_every_preset(
    preset: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    upper = preset.upper()
    monkeypatch.setenv(f"BASTION_{upper}_BASE_URL", "http://proxy.test/v1/")
    monkeypatch.setenv(f"BASTION_{upper}_API_KEY", "sk-bastion")
    vendor_key = PRESETS[preset].api_key_env
    assert vendor_key is not None
    monkeypatch.setenv(vendor_key, "sk-vendor")  # the BASTION_ name wins
    server = Recorder()
    model = openai_compatible_model(f"{preset}:m", http_client=server.client())
    await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert str(server.requests[0].url) == "http://proxy.test/v1/chat/completions"
    assert server.requests[0].headers["authorization"] == "Bearer sk-bastion"
    variables = preset_variables(preset)
    assert variables.base_url[:2] == (f"BASTION_{upper}_BASE_URL", f"{upper}_BASE_URL")
    assert variables.api_key == (f"BASTION_{upper}_API_KEY", vendor_key)


async def test_old_variable_names_still_work(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("LLAMACPP_BASE_URL", "http://gpu:8080/v1")
    monkeypatch.setenv("GROQ_API_KEY", "sk-groq")
    assert openai_compatible_model("llamacpp:m").base_url == "http://gpu:8080/v1"
    server = Recorder()
    await openai_compatible_model("groq:m", http_client=server.client()).request(
        ModelRequest(messages=[UserMessage(content="hi")])
    )
    assert server.requests[0].headers["authorization"] == "Bearer sk-groq"


async def test_one_ollama_variable_serves_both_ollama_protocols(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # covers G-09
    monkeypatch.setenv("BASTION_OLLAMA_BASE_URL", "http://gpu-box:11434")
    assert resolve_model("ollama:qwen3:8b").base_url == "http://gpu-box:11434"  # type: ignore[attr-defined]
    compatible = resolve_model("openai-compatible:ollama:qwen3:8b")
    assert compatible.base_url == "http://gpu-box:11434/v1"  # type: ignore[attr-defined]
    monkeypatch.delenv("BASTION_OLLAMA_BASE_URL")
    monkeypatch.setenv("OLLAMA_HOST", "gpu-box:11434")
    compatible = resolve_model("openai-compatible:ollama:qwen3:8b")
    assert compatible.base_url == "http://gpu-box:11434/v1"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("spec", "variable"),
    [
        ("openai:gpt-4.1", "BASTION_OPENAI_BASE_URL"),
        ("anthropic:claude-sonnet-4-5", "BASTION_ANTHROPIC_BASE_URL"),
        ("gemini:gemini-2.5-flash", "BASTION_GEMINI_BASE_URL"),
        ("openai-responses:gpt-4.1", "BASTION_OPENAI_RESPONSES_BASE_URL"),
    ],
)
def test_protocols_read_the_bastion_base_url_too(
    spec: str, variable: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(variable, "http://gateway.test/")
    assert resolve_model(spec, api_key="k").base_url == "http://gateway.test"  # type: ignore[attr-defined]


# ---- item 4: errors classified by status and body ----


async def _error_of(model: HttpModel) -> ModelError:
    with pytest.raises(ModelError) as caught:
        await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    return caught.value


async def test_http_500_with_a_validation_body_is_a_bad_request_never_retried() -> None:
    server = Recorder((500, transcript("error_500_validation.json")))
    error = await _error_of(compat("llamacpp:m", server))
    assert type(error) is BadRequest
    assert error.status == 500
    assert error.retryable is False
    assert "must contain either 'content' or 'tool_calls'" in str(error)
    # A plain 500 stays a retryable outage.
    server = Recorder((500, transcript("error_500.json")))
    outage = await _error_of(compat("llamacpp:m", server))
    assert type(outage) is Overloaded
    assert outage.retryable is True


async def test_fastapi_validation_body_behind_a_500_is_a_bad_request() -> None:
    body = json.dumps(
        {"detail": [{"type": "missing", "loc": ["body", "messages"], "msg": "Field required"}]}
    ).encode()
    error = await _error_of(compat("vllm:m", Recorder((500, body))))
    assert type(error) is BadRequest


async def test_a_proxy_500_wrapping_an_upstream_400_is_a_bad_request() -> None:
    body = json.dumps({"error": {"code": 400, "message": "Provider returned error"}}).encode()
    error = await _error_of(compat("openrouter:m", Recorder((502, body))))
    assert type(error) is BadRequest
    assert error.status == 502


async def test_in_stream_error_with_code_429_is_a_rate_limit_with_its_wait() -> None:
    error = await _error_of(compat("openrouter:m", Recorder(transcript("stream_error_429.sse"))))
    assert type(error) is RateLimited
    assert error.retry_after == 80.0  # "try again in 1m20s"
    assert error.vendor_code == "429"
    assert "openrouter reported an error in the stream: Rate limit exceeded" in str(error)


async def test_in_stream_error_with_code_400_is_never_retried() -> None:
    error = await _error_of(compat("openrouter:m", Recorder(transcript("stream_error_400.sse"))))
    assert type(error) is BadRequest
    assert error.retryable is False


async def test_vllm_in_stream_error_object_is_classified_by_its_code() -> None:
    error = await _error_of(compat("vllm:m", Recorder(transcript("stream_error_vllm.sse"))))
    assert type(error) is ContextLengthExceeded


async def test_in_stream_error_without_code_stays_a_retryable_outage() -> None:
    error = await _error_of(compat("vllm:m", Recorder(transcript("stream_error.sse"))))
    assert type(error) is Overloaded
    assert error.retryable is True


# ---- item 5: reasoning kept and sent back byte-exact ----


async def _two_steps(spec: str, first: bytes) -> tuple[ModelResponse, dict[str, Any]]:
    server = Recorder(first, TEXT_SSE)
    model = compat(spec, server)
    request = ModelRequest(messages=[UserMessage(content="Weather in Paris?")], tools=[WEATHER])
    response = await model.request(request)
    history = [
        *request.messages,
        response.message,
        ToolMessage(tool_call_id=response.message.tool_calls[0].id, tool_name="get_weather",
                    content="18C"),
    ]  # fmt: skip
    await model.request(ModelRequest(messages=history, tools=[WEATHER]))
    return response, server.json(1)


def _wire_reasoning_details(name: str) -> list[dict[str, Any]]:
    """What a non-streamed answer would carry: the streamed pieces joined per index."""
    entries: dict[int, dict[str, Any]] = {}
    for line in transcript(name).decode().splitlines():
        if not line.startswith("data: {"):
            continue
        data: dict[str, Any] = json.loads(line[6:])
        choices: list[dict[str, Any]] = data.get("choices", [])
        for choice in choices:
            pieces: list[dict[str, Any]] = choice["delta"].get("reasoning_details") or []
            for piece in pieces:
                entry = entries.setdefault(piece["index"], {})
                for key, value in piece.items():
                    if key in ("text", "data", "summary") and key in entry:
                        entry[key] += value
                    else:
                        entry[key] = value
    return [entries[i] for i in sorted(entries)]


async def test_openrouter_reasoning_details_go_back_unchanged() -> None:
    # covers G-63
    response, second = await _two_steps(
        "openrouter:anthropic/claude-sonnet-4.5", transcript("openrouter_reasoning_details.sse")
    )
    parts = response.message.parts
    assert [type(p) for p in parts] == [ReasoningPart]
    assert isinstance(parts[0], ReasoningPart)
    assert parts[0].text == "The user wants Paris weather."
    expected = _wire_reasoning_details("openrouter_reasoning_details.sse")
    assert expected[0]["signature"] == "ErUBCkYIBhgCIkD0sig=="
    assert second["messages"][1] == {
        "role": "assistant",
        "reasoning_details": expected,
        "tool_calls": [
            {
                "id": "toolu_01A09q90qw90lq917835lq9",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location": "Paris"}'},
            }
        ],
    }
    assert json.dumps(second["messages"][1]["reasoning_details"]) == json.dumps(expected)


async def test_deepseek_reasoning_content_goes_back_on_the_tool_call_turn() -> None:
    # covers G-63
    response, second = await _two_steps(
        "deepseek:deepseek-reasoner", transcript("deepseek_thinking_tool_call.sse")
    )
    assert response.message.parts == [ReasoningPart(text="I need the weather for Paris.")]
    assert second["messages"][1] == {
        "role": "assistant",
        "content": "",
        "reasoning_content": "I need the weather for Paris.",
        "tool_calls": [
            {
                "id": "call_00_5qQ1k",
                "type": "function",
                "function": {"name": "get_weather", "arguments": '{"location":"Paris"}'},
            }
        ],
    }


async def test_mistral_thinking_chunks_become_reasoning_and_text_and_go_back() -> None:
    # covers A-11, G-63
    server = Recorder(transcript("mistral_thinking.sse"), TEXT_SSE)
    model = compat("mistral:magistral-medium-2509", server)
    question = UserMessage(content="9.11 or 9.8?")
    response = await model.request(ModelRequest(messages=[question]))
    assert response.message.parts == [
        ReasoningPart(text="Compare 9.11 with 9.8: 0.8 > 0.11."),
        TextPart(text="9.8 is larger."),
    ]
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (14, 38)
    await model.request(
        ModelRequest(messages=[question, response.message, UserMessage(content="Sure?")])
    )
    assert server.json(1)["messages"][1] == {
        "role": "assistant",
        "content": [
            {
                "type": "thinking",
                "thinking": [{"type": "text", "text": "Compare 9.11 with 9.8: 0.8 > 0.11."}],
            },
            {"type": "text", "text": "9.8 is larger."},
        ],
    }


async def test_servers_without_a_reasoning_field_get_none() -> None:
    _, second = await _two_steps("vllm:m", transcript("deepseek_thinking_tool_call.sse"))
    assert set(second["messages"][1]) == {"role", "content", "tool_calls"}


# ---- item 6: usage ----


async def test_cache_writes_reads_and_reasoning_reach_usage() -> None:
    #
    server = Recorder(transcript("openrouter_reasoning_details.sse"))
    response = await compat("openrouter:m", server).request(
        ModelRequest(messages=[UserMessage(content="hi")], tools=[WEATHER])
    )
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens) == (1200, 64)
    assert (usage.cached_read_tokens, usage.cache_write_tokens) == (1000, 150)
    assert usage.reasoning_tokens == 24
    assert usage.unreported_requests == 0


async def test_groq_usage_in_x_groq_is_read() -> None:
    #
    body = (
        b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,'
        b'"delta":{"content":"ok"},"finish_reason":"stop"}],"x_groq":{"id":"req_1",'
        b'"usage":{"prompt_tokens":9,"completion_tokens":2,"total_tokens":11}}}\n\n'
        b"data: [DONE]\n\n"
    )
    response = await compat("groq:m", Recorder(body)).request(
        ModelRequest(messages=[UserMessage(content="hi")])
    )
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (9, 2)


async def test_a_server_that_reports_no_usage_reads_as_not_reported() -> None:
    #
    response = await compat("lmstudio:m", Recorder()).request(
        ModelRequest(messages=[UserMessage(content="hi")])
    )
    assert response.usage.requests == 1
    assert response.usage.unreported_requests == 1
    assert response.usage.total_tokens == 0


# ---- item 7: the non-streaming path ----


async def test_stream_false_sends_one_request_and_yields_the_same_chunks() -> None:
    #
    server = Recorder(transcript("whole_tool_call.json"))
    model = openai_chat_model("gpt-4o-mini", api_key="k", http_client=server.client())
    settings = ModelSettings(stream=False)
    request = ModelRequest(messages=[UserMessage(content="hi")], tools=[WEATHER], settings=settings)
    chunks = [chunk async for chunk in model.stream(request)]
    body = server.json()
    assert body["stream"] is False
    assert "stream_options" not in body
    assert [c.type for c in chunks] == [
        "text",
        "tool_call_start",
        "tool_call_delta",
        "tool_call_end",
        "finish",
    ]
    response = await model.request(request)
    assert response.message.parts == [TextPart(text="Let me check.")]
    assert response.message.tool_calls == [
        ToolCall(
            id="call_DdmO9pD3xa9XTPNJ32zg2hcA",
            name="get_weather",
            arguments='{"location":"Paris, France"}',
        )
    ]
    assert response.finish_reason == "tool_calls"
    assert (response.usage.prompt_tokens, response.usage.completion_tokens) == (82, 17)


async def test_stream_false_carries_reasoning_details_whole() -> None:
    # covers G-63
    details: list[dict[str, Any]] = [
        {"type": "reasoning.summary", "summary": "Summed.", "index": 0,
         "format": "openai-responses-v1"},
        {"type": "reasoning.encrypted", "data": "gAAAAB==", "id": "rs_1", "index": 1,
         "format": "openai-responses-v1"},
    ]  # fmt: skip
    whole = {
        "id": "gen-2",
        "object": "chat.completion",
        "model": "openai/o4-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {
                    "role": "assistant",
                    "content": "42",
                    "reasoning": "Summed.",
                    "reasoning_details": details,
                },
            }
        ],
        "usage": {"prompt_tokens": 5, "completion_tokens": 9, "total_tokens": 14},
    }  # fmt: skip
    server = Recorder(json.dumps(whole, indent=1).encode(), TEXT_SSE)
    model = compat("openrouter:openai/o4-mini", server)
    settings = ModelSettings(stream=False)
    question = UserMessage(content="6*7?")
    response = await model.request(ModelRequest(messages=[question], settings=settings))
    assert response.message.parts == [
        ReasoningPart(
            text="Summed.",
            provider_details={"reasoning_details": details},
        ),
        TextPart(text="42"),
    ]
    await model.request(ModelRequest(messages=[question, response.message]))
    sent = server.json(1)["messages"][1]
    assert sent["reasoning_details"] == details
    assert sent["content"] == "42"


async def test_stream_false_body_that_is_not_json_is_malformed() -> None:
    from bastion.core import MalformedResponse

    server = Recorder(b"<html>gateway</html>")
    model = compat("vllm:m", server)
    settings = ModelSettings(stream=False)
    with pytest.raises(MalformedResponse, match="not JSON"):
        await model.request(ModelRequest(messages=[UserMessage(content="hi")], settings=settings))


async def test_an_agent_emits_the_same_events_streamed_or_not() -> None:
    #
    from bastion import Agent, tool

    @tool(side_effect_class="pure")
    def get_weather(location: str) -> str:
        """Weather at a place."""
        return f"18C in {location}"

    final_sse = (
        b'data: {"choices":[{"index":0,"delta":{"content":"18C in Paris."},'
        b'"finish_reason":"stop"}]}\n\ndata: [DONE]\n\n'
    )
    final_whole = json.dumps(
        {
            "object": "chat.completion",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "stop",
                    "message": {"role": "assistant", "content": "18C in Paris."},
                }
            ],
        }
    ).encode()
    whole = json.loads(transcript("whole_tool_call.json"))
    whole["choices"][0]["message"]["content"] = None
    streamed_call = (
        b'data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,'
        b'"id":"call_DdmO9pD3xa9XTPNJ32zg2hcA","type":"function","function":'
        b'{"name":"get_weather","arguments":"{\\"location\\":\\"Paris, France\\"}"}}]},'
        b'"finish_reason":"tool_calls"}]}\n\ndata: [DONE]\n\n'
    )
    runs: list[list[tuple[str, Any]]] = []
    results: list[Any] = []
    for stream, answers in (
        (True, (streamed_call, final_sse)),
        (False, (json.dumps(whole).encode(), final_whole)),
    ):
        server = Recorder(*answers)
        model = openai_chat_model("gpt-4o-mini", api_key="k", http_client=server.client())
        agent = Agent(
            "weather", model=model, tools=[get_weather], model_settings=ModelSettings(stream=stream)
        )
        events = [
            (event.type, getattr(event, "delta", None) or getattr(event, "tool_name", None))
            async for event in agent.stream("Weather in Paris?")
        ]
        runs.append(events)
        results.append(await agent.run("Weather in Paris?"))
        assert all(json.loads(r.content)["stream"] is stream for r in server.requests)
    assert runs[0] == runs[1]
    assert ("text.delta", "18C in Paris.") in runs[0]
    assert results[0].text == results[1].text == "18C in Paris."


async def test_a_server_that_streams_despite_stream_false_is_still_read() -> None:
    #
    server = Recorder(transcript("tool_call.sse"))
    model = compat("vllm:m", server)
    settings = ModelSettings(stream=False)
    request = ModelRequest(messages=[UserMessage(content="hi")], tools=[WEATHER], settings=settings)
    response = await model.request(request)
    assert server.json()["stream"] is False
    assert [call.name for call in response.message.tool_calls] == ["get_weather"]
    assert response.finish_reason == "tool_calls"
