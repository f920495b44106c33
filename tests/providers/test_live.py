"""The live tier: every adapter against a real server, opt-in (``pytest --live``).

Set, for each protocol to test, ``BASTION_LIVE_<PROTOCOL>_MODEL`` (e.g. ``gpt-4.1-mini``),
and optionally ``BASTION_LIVE_<PROTOCOL>_BASE_URL`` / ``BASTION_LIVE_<PROTOCOL>_API_KEY``
(else the adapter's usual variables, e.g. ``OPENAI_API_KEY``). ``<PROTOCOL>`` is one of
OPENAI, OPENAI_RESPONSES, ANTHROPIC, OLLAMA, GEMINI, OPENAI_COMPATIBLE. With ``--live`` and
none of them set, the tier fails rather than passing on nothing.

OPENAI_COMPATIBLE points the tier at any OpenAI-compatible server you run::

    BASTION_LIVE_OPENAI_COMPATIBLE_BASE_URL=http://localhost:8080/v1 \
    BASTION_LIVE_OPENAI_COMPATIBLE_MODEL=qwen2.5-7b-instruct \
    .venv/bin/pytest --live tests/providers/test_live.py

``BASTION_LIVE_OPENAI_COMPATIBLE_PRESET`` picks a preset's request profile (``vllm``,
``llamacpp``, ``lmstudio``, ``ollama``, …); without it the server gets the fields nearly
every compatible server accepts. Chat Completions and Ollama are also run non-streamed.
"""

from __future__ import annotations

import os

import pytest

from bastion import Agent, tool
from bastion.core import Model, ModelSettings
from bastion.providers import resolve_model

PROTOCOLS = {
    "OPENAI": "openai",
    "OPENAI_RESPONSES": "openai-responses",
    "ANTHROPIC": "anthropic",
    "OLLAMA": "ollama",
    "GEMINI": "gemini",
    "OPENAI_COMPATIBLE": "openai-compatible",
}
# The protocols whose adapters here also send non-streamed requests (stream=False).
WHOLE_ANSWERS = ("OPENAI", "OPENAI_COMPATIBLE", "OLLAMA")


def configured() -> list[str]:
    return [name for name in PROTOCOLS if os.environ.get(f"BASTION_LIVE_{name}_MODEL")]


def live_model(name: str) -> Model:
    options: dict[str, str] = {}
    for option in ("base_url", "api_key"):
        value = os.environ.get(f"BASTION_LIVE_{name}_{option.upper()}")
        if value:
            options[option] = value
    model = os.environ[f"BASTION_LIVE_{name}_MODEL"]
    if name == "OPENAI_COMPATIBLE":
        # A preset's profile if named, else a server of the user's own ("live").
        preset = os.environ.get("BASTION_LIVE_OPENAI_COMPATIBLE_PRESET", "live")
        model = f"{preset}:{model}"
    return resolve_model(f"{PROTOCOLS[name]}:{model}", **options)


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first integer.
        b: The second integer.
    """
    return a + b


pytestmark = pytest.mark.live


def test_the_live_tier_has_something_to_test() -> None:
    assert configured(), "pytest --live needs at least one BASTION_LIVE_<PROTOCOL>_MODEL"


def cases() -> list[tuple[str, bool]]:
    """Each configured protocol streamed, and non-streamed where its adapter sends that."""
    return [(n, True) for n in configured()] + [
        (n, False) for n in configured() if n in WHOLE_ANSWERS
    ]


@pytest.mark.parametrize(("name", "stream"), cases())
async def test_a_real_server_answers_and_calls_a_tool(name: str, stream: bool) -> None:
    #
    # issue 3 live tier: text, tool call, tool result, final answer, usage; streamed or not
    agent = Agent(
        "live",
        model=live_model(name),
        instructions="Use the add tool for arithmetic, then answer with the number only.",
        tools=[add],
        max_steps=4,
        model_settings=ModelSettings(stream=stream),
    )
    result = await agent.run("What is 19 + 23?")
    assert result.status == "completed", result.error
    assert any(call.name == "add" and not call.is_error for call in result.tool_calls)
    assert "42" in result.text
    # A server that sends no usage is counted as "not reported", never as zero tokens.
    assert result.usage.prompt_tokens > 0 or result.usage.unreported_requests > 0
