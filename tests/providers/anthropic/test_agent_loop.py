"""An agent's tool loop end to end over the Messages API wire (SPEC A-11, A-12, C16)."""

from __future__ import annotations

import json

from pydantic import BaseModel

from bastion import Agent, tool
from bastion.core import ModelSettings, ReasoningPart

from ._support import Server, transcript


async def test_tool_loop_keeps_signed_thinking_across_steps() -> None:
    # covers A-12, C16, G-63
    @tool(side_effect_class="pure")
    def get_weather(location: str) -> str:
        """The weather at a location."""
        return f"{location}: 18C, sunny"

    server = Server(transcript("thinking_tool"), transcript("text"))
    agent = Agent(
        "weather",
        model=server.model(),
        instructions="Be brief.",
        tools=[get_weather],
        model_settings=ModelSettings(
            max_tokens=2048, extra={"thinking": {"type": "enabled", "budget_tokens": 1024}}
        ),
    )
    result = await agent.run("Weather in Paris?")
    result.raise_for_status()
    assert result.output == "Hello!"
    assert result.usage.requests == 2
    assert result.usage.prompt_tokens == 602 + 25

    first, second = server.requests
    assert first["system"] == "Be brief."
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 1024}
    assert [t["name"] for t in first["tools"]] == ["get_weather"]
    signature = json.loads(
        transcript("thinking_tool").split(b'"signature_delta", "signature": ')[1].split(b"}")[0]
    )
    assert second["messages"][1:] == [
        {
            "role": "assistant",
            "content": [
                {
                    "type": "thinking",
                    "thinking": "The user wants the weather in Paris. "
                    'I should call get_weather with location "Paris, France".',
                    "signature": signature,
                },
                {
                    "type": "tool_use",
                    "id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
                    "name": "get_weather",
                    "input": {"location": "Paris, France"},
                },
            ],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_01CswdEQBMshySk6Y9DFKrfq",
                    "content": "Paris, France: 18C, sunny",
                    "is_error": False,
                }
            ],
        },
    ]
    reasoning = [
        p
        for m in result.messages
        if m.role == "assistant"
        for p in m.parts
        if isinstance(p, ReasoningPart)
    ]
    assert [p.signature for p in reasoning] == [signature]


class CityInfo(BaseModel):
    city: str
    population: int


async def test_structured_output_through_the_forced_tool() -> None:
    #
    server = Server(transcript("structured_output"))
    agent = Agent("cities", model=server.model(), output_type=CityInfo)
    result = await agent.run("Tell me about Paris.")
    result.raise_for_status()
    assert result.output == CityInfo(city="Paris", population=2102650)
    (body,) = server.requests
    assert body["tool_choice"]["type"] == "tool"
    assert body["tools"][0]["name"] == body["tool_choice"]["name"]
