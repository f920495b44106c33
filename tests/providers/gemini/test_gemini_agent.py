"""An agent's tool loop end to end over the Gemini wire (mock transport)."""

from __future__ import annotations

from bastion import Agent, tool

from ._support import model_for


@tool(side_effect_class="pure")
def get_weather(city: str, unit: str = "celsius") -> str:
    """Weather for a city."""
    return f"18°C in {city}"


async def test_tool_loop_round_trips_calls_results_and_signatures() -> None:
    # covers G-63, A-11, A-12, C2
    model, server = model_for("two_function_calls.sse", "text.sse")
    agent = Agent("weather", model=model, instructions="Be brief.", tools=[get_weather])
    result = await agent.run("Weather in Paris and Tokyo?")
    assert result.status == "completed"
    assert result.output == "Hello, world!"
    assert [(r.name, r.arguments, r.result) for r in result.tool_calls] == [
        ("get_weather", '{"city": "Paris"}', "18°C in Paris"),
        ("get_weather", '{"city": "Tokyo", "unit": "celsius"}', "18°C in Tokyo"),
    ]
    assert result.usage.prompt_tokens == 52 + 8
    assert result.usage.requests == 2
    second = server.body(1)
    assert second["systemInstruction"] == {"parts": [{"text": "Be brief."}]}
    assert second["contents"][1:] == [
        {
            "role": "model",
            "parts": [
                {
                    "functionCall": {"name": "get_weather", "args": {"city": "Paris"}},
                    "thoughtSignature": "EqQDCqEDAdHtim9/parallel+first==",
                },
                {
                    "functionCall": {
                        "name": "get_weather",
                        "args": {"city": "Tokyo", "unit": "celsius"},
                    }
                },
            ],
        },
        {
            "role": "user",
            "parts": [
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "18°C in Paris"},
                    }
                },
                {
                    "functionResponse": {
                        "name": "get_weather",
                        "response": {"result": "18°C in Tokyo"},
                    }
                },
            ],
        },
    ]
