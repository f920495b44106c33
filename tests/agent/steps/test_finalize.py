"""Structured output with validation feedback and a retry budget (SPEC C17, §3.1 scenario 26)."""

from __future__ import annotations

from pydantic import BaseModel

from bastion import Agent
from bastion.agent import Output
from bastion.core import UserMessage
from bastion.testing import ScriptedModel
from tests.agent.conftest import brief


class City(BaseModel):
    name: str
    population: int


async def test_structured_output_fails_once_then_succeeds() -> None:
    # covers C17, A-14
    model = ScriptedModel(
        [
            '{"name": "Lyon", "population": "lots"}',
            '```json\n{"name": "Lyon", "population": 522250}\n```',
        ]
    )
    agent: Agent[None, City] = Agent("a", model=model, output_type=City)
    events = [e async for e in agent.stream("biggest city near the Alps?")]
    assert [line for line in brief(events) if not line.startswith("text.delta")] == [
        "agent.start",
        "step.start 1",
        "text.complete",
        "step.end 1 stop",
        "step.start 2",
        "text.complete",
        "step.end 2 stop",
        "agent.end completed",
    ]
    end = events[-1]
    assert end.type == "agent.end"
    assert end.output == City(name="Lyon", population=522250)
    feedback = model.requests[1].messages[-1]
    assert isinstance(feedback, UserMessage)
    assert "`population`" in feedback.text
    assert "valid integer" in feedback.text
    assert model.requests[0].output is not None
    assert model.requests[0].output.json_schema["required"] == ["name", "population"]


async def test_structured_output_failing_past_the_budget_fails_the_run() -> None:
    # covers C17 (no silent cast), SPEC §3.1 scenario 26
    model = ScriptedModel(["not json", "still not json"])
    agent: Agent[None, City] = Agent("a", model=model, output_type=Output(City, retries=1))
    result = await agent.run("go")
    assert result.status == "failed"
    assert result.output is None
    assert result.error is not None
    assert result.error.code == "output_validation_failed"
    assert result.text == "still not json"


async def test_non_object_output_types() -> None:
    # covers C17 (any type pydantic validates)
    agent: Agent[None, list[int]] = Agent(
        "a", model=ScriptedModel(["[1, 2, 3]"]), output_type=list[int]
    )
    result = await agent.run("numbers")
    assert result.output == [1, 2, 3]


async def test_empty_answer_with_structured_output_is_reported() -> None:
    model = ScriptedModel(["", '{"name": "Oslo", "population": 709037}'])
    result = await Agent("a", model=model, output_type=City).run("go")
    assert result.output == City(name="Oslo", population=709037)
    assert "empty" in model.requests[1].messages[-1].text  # type: ignore[union-attr]
