"""ReasoningConfig in each protocol's own request fields, read from the bodies sent."""

from __future__ import annotations

from typing import Any

import pytest

from bastion.core import (
    ModelRequest,
    ModelSettings,
    ReasoningConfig,
    ReasoningEffort,
    UserError,
    UserMessage,
)
from bastion.providers import HttpModel

from ._wire import Wire, preset_model, wire_model


def _ask(config: ReasoningConfig, **settings: Any) -> ModelRequest:
    return ModelRequest(
        messages=[UserMessage(content="Think hard.")],
        settings=ModelSettings(reasoning=config, **settings),
    )


async def _sent(model: HttpModel, wire: Wire, config: ReasoningConfig, **settings: Any) -> Any:
    await model.request(_ask(config, **settings))
    return wire.body()


async def _sent_by(protocol: str, config: ReasoningConfig, **settings: Any) -> Any:
    model, wire = wire_model(protocol)
    return await _sent(model, wire, config, **settings)


def test_reasoning_config_is_checked_when_made() -> None:
    # covers A-38, C16
    with pytest.raises(UserError, match="needs an effort, a budget_tokens, or both"):
        ReasoningConfig()
    with pytest.raises(UserError, match="effort must be one of"):
        ReasoningConfig(effort="extreme")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="budget_tokens must be a positive integer"):
        ReasoningConfig(budget_tokens=0)


@pytest.mark.parametrize(
    ("protocol", "config", "expected"),
    [
        ("openai-chat", ReasoningConfig(effort="high"), {"reasoning_effort": "high"}),
        ("openai-responses", ReasoningConfig(effort="low"), {"reasoning": {"effort": "low"}}),
        (
            "anthropic",
            ReasoningConfig(budget_tokens=2048),
            {"thinking": {"type": "enabled", "budget_tokens": 2048}},
        ),
        ("anthropic", ReasoningConfig(effort="medium"), {"output_config": {"effort": "medium"}}),
        ("anthropic", ReasoningConfig(effort="none"), {"thinking": {"type": "disabled"}}),
        (
            "gemini",
            ReasoningConfig(budget_tokens=512),
            {
                "generationConfig": {
                    "thinkingConfig": {"thinkingBudget": 512, "includeThoughts": True}
                }
            },
        ),
        (
            "gemini",
            ReasoningConfig(effort="minimal"),
            {
                "generationConfig": {
                    "thinkingConfig": {"thinkingLevel": "minimal", "includeThoughts": True}
                }
            },
        ),
        (
            "gemini",
            ReasoningConfig(effort="none"),
            {"generationConfig": {"thinkingConfig": {"thinkingBudget": 0}}},
        ),
        ("ollama", ReasoningConfig(effort="high"), {"think": "high"}),
        ("ollama", ReasoningConfig(effort="none"), {"think": False}),
    ],
)
async def test_each_protocol_sends_reasoning_in_its_own_fields(
    protocol: str, config: ReasoningConfig, expected: dict[str, Any]
) -> None:
    # covers A-38, C16
    body = await _sent_by(protocol, config)
    assert {key: body[key] for key in expected} == expected


async def test_anthropic_budget_with_effort_sends_both() -> None:
    # covers A-38, C16
    config = ReasoningConfig(effort="high", budget_tokens=4000)
    body = await _sent_by("anthropic", config, max_tokens=16_000)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert body["output_config"] == {"effort": "high"}
    assert body["max_tokens"] == 16_000


@pytest.mark.parametrize(
    ("preset", "config", "expected"),
    [
        (
            "openrouter",
            ReasoningConfig(effort="high", budget_tokens=3000),
            {"reasoning": {"max_tokens": 3000, "effort": "high"}},
        ),
        (
            "deepseek",
            ReasoningConfig(effort="max"),
            {"thinking": {"type": "enabled"}, "reasoning_effort": "max"},
        ),
        ("deepseek", ReasoningConfig(effort="none"), {"thinking": {"type": "disabled"}}),
        ("vllm", ReasoningConfig(effort="low"), {"reasoning_effort": "low"}),
    ],
)
async def test_compatible_servers_get_their_own_spelling(
    preset: str, config: ReasoningConfig, expected: dict[str, Any]
) -> None:
    # covers A-38, C16
    model, wire = preset_model(preset)
    body = await _sent(model, wire, config)
    reasoning_keys = {"reasoning", "reasoning_effort", "thinking"}
    assert {k: v for k, v in body.items() if k in reasoning_keys} == expected


@pytest.mark.parametrize(
    ("protocol", "config", "message"),
    [
        ("openai-chat", ReasoningConfig(budget_tokens=2000), "no thinking budget"),
        ("openai-chat", ReasoningConfig(effort="max"), "effort='max'"),
        ("openai-responses", ReasoningConfig(budget_tokens=2000), "no thinking budget"),
        ("anthropic", ReasoningConfig(effort="minimal"), "effort='minimal'"),
        ("anthropic", ReasoningConfig(budget_tokens=512), "at least 1024"),
        ("anthropic", ReasoningConfig(budget_tokens=8000), r"below max_tokens \(4096\)"),
        ("anthropic", ReasoningConfig(effort="none", budget_tokens=2000), "turns thinking off"),
        ("gemini", ReasoningConfig(effort="low", budget_tokens=100), "not both"),
        ("gemini", ReasoningConfig(effort="xhigh"), "effort='xhigh'"),
        ("ollama", ReasoningConfig(budget_tokens=100), "no thinking budget"),
        ("ollama", ReasoningConfig(effort="minimal"), "effort='minimal'"),
    ],
)
async def test_a_setting_a_protocol_cannot_express_is_refused_before_sending(
    protocol: str, config: ReasoningConfig, message: str
) -> None:
    # covers A-38, C16
    model, wire = wire_model(protocol)
    with pytest.raises(UserError, match=message):
        await model.request(_ask(config))
    assert wire.raw == []


async def test_extra_still_overrides_the_mapped_fields() -> None:
    # covers A-38, C16
    effort: ReasoningEffort = "low"
    body = await _sent_by(
        "openai-chat", ReasoningConfig(effort=effort), extra={"reasoning_effort": "high"}
    )
    assert body["reasoning_effort"] == "high"
