"""Native structured output (``output_config.format``) on the models that have it.

Claude Sonnet/Opus 4.5 and later and Haiku 4.5 constrain their answer to a JSON schema;
older models get the forced output tool (``test_parser``). SPEC C17, A-11.
"""

from __future__ import annotations

from typing import Any

import pytest
from pydantic import BaseModel, Field

from bastion import Agent
from bastion.core import ModelRequest, ModelSettings, OutputSpec, ToolDefinition, UserMessage

from ._support import Server, transcript


class CityInfo(BaseModel):
    city: str
    population: int = Field(ge=0)


class Tree(BaseModel):
    label: str
    children: list[Tree] = []


CITY = OutputSpec(name="CityInfo", json_schema=CityInfo.model_json_schema())


async def test_native_output_sends_a_strict_json_schema_format() -> None:
    # covers C17
    server = Server(transcript("structured_native"))
    model = server.model("claude-sonnet-4-5-20250929")
    response = await model.request(
        ModelRequest(messages=[UserMessage(content="Paris?")], output=CITY)
    )
    assert response.message.text == '{"city": "Paris", "population": 2102650}'
    assert response.finish_reason == "stop"
    body = server.requests[0]
    assert body["output_config"] == {
        "format": {
            "type": "json_schema",
            "schema": {
                "type": "object",
                "title": "CityInfo",
                "properties": {
                    "city": {"title": "City", "type": "string"},
                    # the grammar has no numeric bounds: named in the description instead
                    "population": {
                        "title": "Population",
                        "type": "integer",
                        "description": "(minimum=0)",
                    },
                },
                "required": ["city", "population"],
                "additionalProperties": False,
            },
        }
    }
    assert "tools" not in body
    assert "tool_choice" not in body


@pytest.mark.parametrize(
    "name",
    ["claude-sonnet-4-5", "claude-opus-4-5-20251101", "claude-haiku-4-5", "claude-opus-4-6"],
)
async def test_models_with_structured_outputs_use_them(name: str) -> None:

    server = Server(transcript("structured_native"))
    await server.model(name).request(ModelRequest(messages=[UserMessage(content="x")], output=CITY))
    assert "output_config" in server.requests[0]


@pytest.mark.parametrize("name", ["claude-sonnet-4-20250514", "claude-3-5-haiku-latest"])
async def test_older_models_get_the_forced_tool(name: str) -> None:
    # covers C17
    server = Server(transcript("structured_output"))
    response = await server.model(name).request(
        ModelRequest(messages=[UserMessage(content="x")], output=CITY)
    )
    assert response.message.text == '{"city": "Paris", "population": 2102650}'
    assert "output_config" not in server.requests[0]
    assert server.requests[0]["tool_choice"] == {"type": "tool", "name": "CityInfo"}


async def test_native_output_can_be_turned_off_per_model() -> None:

    server = Server(transcript("structured_output"))
    model = server.model("claude-sonnet-4-5", native_output=False)
    await model.request(ModelRequest(messages=[UserMessage(content="x")], output=CITY))
    assert "output_config" not in server.requests[0]


async def test_a_recursive_schema_falls_back_to_the_forced_tool() -> None:
    # the structured-output grammar has no recursion
    tree = OutputSpec(name="Tree", json_schema=Tree.model_json_schema())
    server = Server(transcript("structured_output"))
    await server.model("claude-sonnet-4-5").request(
        ModelRequest(messages=[UserMessage(content="x")], output=tree)
    )
    body: dict[str, Any] = server.requests[0]
    assert "output_config" not in body
    assert body["tool_choice"] == {"type": "tool", "name": "Tree"}


async def test_tools_stay_callable_next_to_native_output() -> None:

    weather = ToolDefinition(
        name="get_weather",
        description="d",
        parameters={"type": "object", "properties": {"q": {"type": "string", "maxLength": 9}}},
        strict=True,
    )
    server = Server(transcript("structured_native"))
    await server.model("claude-sonnet-4-5").request(
        ModelRequest(messages=[UserMessage(content="x")], tools=[weather], output=CITY)
    )
    body = server.requests[0]
    assert "tool_choice" not in body  # the model may call the tool or answer in JSON
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "d",
            "input_schema": {
                "type": "object",
                "properties": {"q": {"type": "string", "description": "(maxLength=9)"}},
                "additionalProperties": False,
            },
            "strict": True,
        }
    ]


async def test_agent_typed_output_with_native_structured_output() -> None:
    # covers C17, A-11
    server = Server(transcript("structured_native"))
    agent = Agent("cities", model=server.model("claude-sonnet-4-5"), output_type=CityInfo)
    result = await agent.run("Tell me about Paris.")
    result.raise_for_status()
    assert result.output == CityInfo(city="Paris", population=2102650)


async def test_extra_output_config_joins_the_format() -> None:
    # an effort setting in extra must not drop the schema
    server = Server(transcript("structured_native"))
    settings = ModelSettings(extra={"output_config": {"effort": "low"}})
    await server.model("claude-opus-4-5").request(
        ModelRequest(messages=[UserMessage(content="x")], output=CITY, settings=settings)
    )
    config = server.requests[0]["output_config"]
    assert config["effort"] == "low"
    assert config["format"]["type"] == "json_schema"
