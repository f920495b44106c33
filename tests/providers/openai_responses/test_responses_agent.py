"""End to end: an agent's tool loop over the Responses adapter and a mocked OpenAI.

SPEC G-63, A-11 (reasoning carried across steps), C2 (usage summed per model).
"""

from __future__ import annotations

from bastion import Agent, tool

from ._support import model_for, sse, transcript


async def test_agent_tool_loop_over_the_responses_api() -> None:
    # covers G-63, A-11, C2
    calls: list[str] = []

    @tool(side_effect_class="read_only")
    def get_weather(location: str) -> str:
        """Weather at a place."""
        calls.append(location)
        return "18°C, sunny"

    model, server = model_for(
        sse(transcript("reasoning_call")), sse(transcript("final_answer")), name="o4-mini"
    )
    agent = Agent("weather", model=model, tools=[get_weather], instructions="Be brief.")
    result = await agent.run("Weather in Paris?")

    assert result.ok
    assert result.output == "It is 18°C and sunny in Paris."
    assert calls == ["Paris, France"]
    assert result.steps == 2
    assert result.usage.prompt_tokens == 1251 + 340
    assert result.usage.cached_read_tokens == 1024 + 256
    assert list(result.usage_by_model) == ["openai-responses:o4-mini"]

    first, second = server.bodies
    assert first["tools"][0]["name"] == "get_weather"
    assert first["input"][0] == {"role": "system", "content": "Be brief."}
    kinds = [item.get("type") or item["role"] for item in second["input"]]
    assert kinds == ["system", "user", "reasoning", "function_call", "function_call_output"]
    assert second["input"][2]["encrypted_content"].startswith("gAAAAAB")
    assert second["input"][4] == {
        "type": "function_call_output",
        "call_id": "call_Rtr8Q3fsUp0mYFcz7fI2fp0m",
        "output": "18°C, sunny",
    }
