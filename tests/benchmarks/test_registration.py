"""The registration benchmark times real work: every tool it builds is usable by the agent."""

from __future__ import annotations

from benchmarks.registration import agent_with, schema_tools, signature_tools


def test_the_timed_agent_holds_every_tool_with_its_schema() -> None:
    signature, schema = signature_tools(20), schema_tools(20)
    agent = agent_with(signature)
    assert sorted(agent.config.tools.by_name) == sorted(f"lookup_{i}" for i in range(20))
    assert signature[0].parameters["required"] == ["city"]
    assert set(signature[0].parameters["properties"]) == {"city", "days"}
    assert schema[3].parameters["properties"] == {
        "city": {"type": "string", "description": "City name."}
    }
