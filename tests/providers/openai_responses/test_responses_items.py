"""Reasoning items of the Responses API: one part per item, byte-exact, in their order.

A gpt-5 answer that reasons, calls, reasons again and calls again must go back as the same
four items in the same order (the API rejects a reasoning item not followed by the item it
led to), with every ``id`` and ``encrypted_content`` unchanged. SPEC G-63, C16.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion.core import (
    ModelRequest,
    ModelSettings,
    ReasoningPart,
    ToolDefinition,
    ToolMessage,
    UserMessage,
)

from ._support import model_for, sse, transcript

WEATHER = ToolDefinition(
    name="get_weather",
    description="Weather at a place.",
    parameters={"type": "object", "properties": {"location": {"type": "string"}}},
)


def done_items(name: str) -> list[dict[str, Any]]:
    """The finished output items of a transcript, as the server sent them."""
    events = [
        json.loads(line[6:])
        for line in transcript(name).decode().splitlines()
        if line.startswith("data: ")
    ]
    return [e["item"] for e in events if e["type"] == "response.output_item.done"]


async def test_adjacent_reasoning_items_stay_separate_parts() -> None:
    # covers G-63
    model, _ = model_for(sse(transcript("reasoning_twice")), name="gpt-5")
    response = await model.request(
        ModelRequest(messages=[UserMessage(content="Paris and Lyon?")], tools=[WEATHER])
    )
    first, second = response.message.parts
    items = done_items("reasoning_twice")
    assert isinstance(first, ReasoningPart)
    assert isinstance(second, ReasoningPart)
    assert first.text == items[0]["summary"][0]["text"]
    assert second.text == items[2]["summary"][0]["text"]
    assert first.provider_details == {
        "id": items[0]["id"],
        "summary": items[0]["summary"],
        "encrypted_content": items[0]["encrypted_content"],
    }
    assert second.provider_details == {
        "id": items[2]["id"],
        "summary": items[2]["summary"],
        "encrypted_content": items[2]["encrypted_content"],
    }
    assert [c.id for c in response.message.tool_calls] == [items[1]["call_id"], items[3]["call_id"]]


async def test_reasoning_call_reasoning_call_goes_back_in_order_byte_exact() -> None:
    # covers G-63, C16
    model, server = model_for(
        sse(transcript("reasoning_twice")), sse(transcript("final_answer")), name="gpt-5"
    )
    first = ModelRequest(messages=[UserMessage(content="Paris and Lyon?")], tools=[WEATHER])
    response = await model.request(first)
    results = [
        ToolMessage(tool_call_id=c.id, tool_name=c.name, content=f"{n}°C")
        for n, c in zip((18, 21), response.message.tool_calls, strict=True)
    ]
    await model.request(
        ModelRequest(messages=[*first.messages, response.message, *results], tools=[WEATHER])
    )
    reasoning_a, call_a, reasoning_b, call_b = done_items("reasoning_twice")

    def reasoning(item: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "reasoning",
            "id": item["id"],
            "summary": item["summary"],
            "encrypted_content": item["encrypted_content"],
        }

    def call(item: dict[str, Any]) -> dict[str, Any]:
        return {
            "type": "function_call",
            "call_id": item["call_id"],
            "name": item["name"],
            "arguments": item["arguments"],
            "id": item["id"],
        }

    assert server.bodies[1]["input"] == [
        {"role": "user", "content": [{"type": "input_text", "text": "Paris and Lyon?"}]},
        reasoning(reasoning_a),
        call(call_a),
        reasoning(reasoning_b),
        call(call_b),
        {"type": "function_call_output", "call_id": call_a["call_id"], "output": "18°C"},
        {"type": "function_call_output", "call_id": call_b["call_id"], "output": "21°C"},
    ]


@pytest.mark.parametrize("name", ["gpt-5", "gpt-5-mini", "gpt-5.1", "o3", "o4-mini", "o1"])
async def test_reasoning_models_ask_for_encrypted_reasoning(name: str) -> None:
    # covers G-63
    model, server = model_for(sse(transcript("text")), name=name)
    await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert server.bodies[0]["store"] is False
    assert server.bodies[0]["include"] == ["reasoning.encrypted_content"]


@pytest.mark.parametrize("name", ["gpt-4.1", "gpt-4o-mini", "gpt-5-chat-latest"])
async def test_non_reasoning_models_do_not_ask_for_it(name: str) -> None:
    # covers G-63
    model, server = model_for(sse(transcript("text")), name=name)
    await model.request(ModelRequest(messages=[UserMessage(content="hi")]))
    assert "include" not in server.bodies[0]


async def test_stored_conversations_do_not_need_encrypted_reasoning() -> None:
    # covers G-63: with store on, the server keeps the items itself
    model, server = model_for(sse(transcript("text")), name="gpt-5")
    settings = ModelSettings(extra={"store": True})
    await model.request(ModelRequest(messages=[UserMessage(content="hi")], settings=settings))
    assert server.bodies[0]["store"] is True
    assert "include" not in server.bodies[0]
