"""An agent's tool loop end to end through the Ollama adapter and a mock transport.

SPEC G-09, A-11, C9.
"""

from __future__ import annotations

from bastion import Agent, tool
from bastion.core import ToolMessage
from bastion.providers import resolve_model

from ._support import Recorder, model_with, transcript


@tool(side_effect_class="pure")
def get_current_weather(location: str, format: str) -> str:
    """Get the current weather for a location.

    Args:
        location: City and country.
        format: "celsius" or "fahrenheit".
    """
    return f"22 degrees {format} in {location}"


async def test_agent_runs_a_tool_loop_over_ollama() -> None:
    # covers G-09, A-11, C9
    recorder = Recorder(transcript("tool_call.ndjson"), transcript("text.ndjson"))
    agent = Agent("weather", model=model_with(recorder), tools=[get_current_weather])
    result = await agent.run("What is the weather in Paris?")
    result.raise_for_status()
    assert result.output == "The sky is blue."
    assert result.steps == 2
    assert result.usage.prompt_tokens == 122 + 26
    assert result.usage.completion_tokens == 33 + 282
    tool_results = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert [m.text for m in tool_results] == ["22 degrees celsius in Paris, FR"]
    second = recorder.json(1)
    assert second["messages"][-2:] == [
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "function": {
                        "name": "get_current_weather",
                        "arguments": {"format": "celsius", "location": "Paris, FR"},
                    }
                }
            ],
        },
        {
            "role": "tool",
            "tool_name": "get_current_weather",
            "content": "22 degrees celsius in Paris, FR",
        },
    ]
    assert second["tools"][0]["function"]["name"] == "get_current_weather"


def test_registry_resolves_model_names_with_tags() -> None:
    # covers G-09
    model = resolve_model("ollama:qwen2.5:7b-instruct")
    assert model.key == "ollama:qwen2.5:7b-instruct"
    assert model.name == "qwen2.5:7b-instruct"
