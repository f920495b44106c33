"""Structured-output modes: native JSON schema, prompted JSON, final-answer tool (issue 12)."""

from __future__ import annotations

import json

import pytest
from pydantic import BaseModel

from bastion import Agent, tool
from bastion.agent import Output
from bastion.core import SystemMessage, ToolMessage, UserError, UserMessage
from bastion.providers import HttpModel, ModelProfile
from bastion.providers.openai import ChatCompletionsProtocol
from bastion.testing import Call, ScriptedModel, Turn
from tests.agent.conftest import brief, chat_model_answering


class City(BaseModel):
    name: str
    population: int


GOOD = '{"name": "Lyon", "population": 522250}'
BAD = '{"name": "Lyon", "population": "lots"}'


async def test_native_mode_sends_the_schema_as_the_output_spec() -> None:
    # covers issue 12 (native JSON-schema mode)
    model = ScriptedModel([GOOD])
    result = await Agent("a", model=model, output_type=Output(City, mode="native")).run("city?")
    assert result.output == City(name="Lyon", population=522250)
    request = model.requests[0]
    assert request.output is not None
    assert (request.output.mode, request.output.json_schema["title"]) == ("native", "City")
    assert [t.name for t in request.tools] == []


async def test_prompted_mode_puts_the_schema_in_the_prompt_and_retries_on_mismatch() -> None:
    # covers issue 12 (JSON object + schema in the prompt, validation retry)
    model = ScriptedModel([BAD, GOOD])
    agent: Agent[None, City] = Agent(
        "a", model=model, instructions="Be brief.", output_type=Output(City, mode="prompted")
    )
    result = await agent.run("city?")
    assert result.output == City(name="Lyon", population=522250)
    first, second = model.requests
    assert first.output is not None
    assert first.output.mode == "prompted"
    system = first.messages[0]
    assert isinstance(system, SystemMessage)
    assert system.content.startswith("Be brief.\n\nAnswer with a single JSON value")
    assert '"population": {"title": "Population", "type": "integer"}' in system.content
    feedback = second.messages[-1]
    assert isinstance(feedback, UserMessage)
    assert "`population`" in feedback.text
    transcript_system = result.messages[0]  # the transcript keeps the instructions as given
    assert isinstance(transcript_system, SystemMessage)
    assert transcript_system.content == "Be brief."


async def test_tool_mode_answers_with_the_final_result_tool_and_retries_through_it() -> None:
    # covers issue 12 (final-answer tool, validation retry as a tool error)
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("final_result", json.loads(BAD), id="f1")]),
            Turn(tool_calls=[Call("final_result", json.loads(GOOD), id="f2")]),
        ]
    )
    agent: Agent[None, City] = Agent("a", model=model, output_type=Output(City, mode="tool"))
    events = [e async for e in agent.stream("city?")]
    lines = [line for line in brief(events) if not line.startswith("tool.call.delta")]
    assert lines == [
        "agent.start",
        "step.start 1",
        "tool.call.start final_result#f1",
        "tool.call.end final_result#f1",
        "step.end 1 tool_calls",
        "step.start 2",
        "tool.call.start final_result#f2",
        "tool.call.end final_result#f2",
        "step.end 2 tool_calls",
        "agent.end completed",
    ]
    end = events[-1]
    assert end.type == "agent.end"
    assert end.output == City(name="Lyon", population=522250)
    first, second = model.requests
    assert first.output is None
    assert [t.name for t in first.tools] == ["final_result"]
    assert first.settings.tool_choice == "required"
    error = second.messages[-1]
    assert isinstance(error, ToolMessage)
    assert (error.tool_call_id, error.is_error) == ("f1", True)
    assert "`population`" in error.text
    assert "Call final_result again" in error.text


async def test_tool_mode_keeps_the_transcript_valid_for_the_next_turn() -> None:
    model = ScriptedModel([Turn(tool_calls=[Call("final_result", json.loads(GOOD), id="f")])])
    result = await Agent("a", model=model, output_type=Output(City, mode="tool")).run("city?")
    last = result.messages[-1]
    assert isinstance(last, ToolMessage)
    assert (last.tool_call_id, last.text, last.is_error) == ("f", "Final answer received.", False)


@tool(side_effect_class="pure")
def population(city: str) -> int:
    """Look up a population."""
    return 522250


async def test_tool_mode_runs_real_tools_first_and_wraps_non_object_types() -> None:
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("population", {"city": "Lyon"})]),
            Turn(tool_calls=[Call("final_result", {"response": [522250, 1]})]),
        ]
    )
    agent: Agent[None, list[int]] = Agent(
        "a", model=model, tools=[population], output_type=Output(list[int], mode="tool")
    )
    result = await agent.run("numbers?")
    assert result.output == [522250, 1]
    assert [t.name for t in model.requests[0].tools] == ["population", "final_result"]
    parameters = model.requests[0].tools[1].parameters
    assert parameters["required"] == ["response"]
    assert parameters["properties"]["response"]["type"] == "array"


async def test_tool_mode_accepts_a_valid_text_answer_and_points_a_bad_one_at_the_tool() -> None:
    model = ScriptedModel(["I think Lyon.", GOOD])
    agent: Agent[None, City] = Agent("a", model=model, output_type=Output(City, mode="tool"))
    result = await agent.run("city?")
    assert result.output == City(name="Lyon", population=522250)
    feedback = model.requests[1].messages[-1]
    assert isinstance(feedback, UserMessage)
    assert "call the final_result tool with your answer" in feedback.text


async def test_the_mode_comes_from_the_model_unless_the_agent_sets_it() -> None:
    # covers issue 12 (mode picked from the model profile, overridable per agent)
    prompted_model = ScriptedModel([GOOD], output_mode="prompted")
    await Agent("a", model=prompted_model, output_type=City).run("city?")
    output = prompted_model.requests[0].output
    assert output is not None
    assert output.mode == "prompted"
    overridden = ScriptedModel([GOOD], output_mode="prompted")
    await Agent("b", model=overridden, output_type=Output(City, mode="native")).run("city?")
    output = overridden.requests[0].output
    assert output is not None
    assert output.mode == "native"


def test_profiles_pick_the_mode_of_http_models() -> None:
    protocol = ChatCompletionsProtocol()
    default = HttpModel("m", protocol=protocol, api_key="k")
    no_schema = HttpModel(
        "m", protocol=protocol, api_key="k", profile=ModelProfile(json_schema=False)
    )
    tools = HttpModel("m", protocol=protocol, api_key="k", profile=ModelProfile(output_mode="tool"))
    assert (default.output_mode, no_schema.output_mode, tools.output_mode) == (
        "native",
        "prompted",
        "tool",
    )


async def test_prompted_mode_asks_the_wire_for_json_mode_not_a_schema() -> None:
    model, bodies = chat_model_answering('{"name": "Lyon", "population": 1}')
    agent = Agent("a", model=model, output_type=Output(City, mode="prompted"), retry=None)
    result = await agent.run("city?")
    assert result.output == City(name="Lyon", population=1)
    assert bodies[0]["response_format"] == {"type": "json_object"}
    assert "JSON schema" in bodies[0]["messages"][0]["content"]


def test_bad_output_modes_are_user_errors() -> None:
    with pytest.raises(UserError, match=r"unknown Output\.mode 'json'"):
        Agent("a", model=ScriptedModel([]), output_type=Output(City, mode="json"))  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="needs an output type other than str"):
        Agent("a", model=ScriptedModel([]), output_type=Output(str, mode="tool"))

    @tool(side_effect_class="pure")
    def final_result(x: int) -> int:
        """Clash."""
        return x

    with pytest.raises(UserError, match="has that name"):
        Agent(
            "a",
            model=ScriptedModel([]),
            tools=[final_result],
            output_type=Output(City, mode="tool"),
        )
