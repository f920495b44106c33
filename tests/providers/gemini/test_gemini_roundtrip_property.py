"""Property: thought signatures and function-call ids survive three steps byte-exact.

Each step answers with a thought, a signed text part and a function call carrying
Gemini's id and its own signature; every later request sends all of them back, on the
parts they came on. SPEC G-63, C16.
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from bastion.core import Message, ModelRequest, ToolDefinition, ToolMessage, UserMessage

from ._support import model_for

WEATHER = ToolDefinition(name="get_weather", description="d", parameters={})
OPAQUE = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30)
STEP = st.fixed_dictionaries(
    {"thought": OPAQUE, "text": OPAQUE, "text_sig": OPAQUE, "call_sig": OPAQUE, "id": OPAQUE}
)


def parts_of(step: dict[str, str], n: int) -> list[dict[str, Any]]:
    """The parts step ``n`` answers with."""
    return [
        {"text": step["thought"], "thought": True},
        {"text": step["text"], "thoughtSignature": step["text_sig"]},
        {
            "functionCall": {
                "id": f"{step['id']}{n}",
                "name": "get_weather",
                "args": {"q": step["text"]},
            },
            "thoughtSignature": step["call_sig"],
        },
    ]


def stream_of(parts: list[dict[str, Any]]) -> bytes:
    events: list[dict[str, Any]] = [
        {"candidates": [{"content": {"parts": [p], "role": "model"}}]} for p in parts
    ]
    events[-1] = {"candidates": [{**events[-1]["candidates"][0], "finishReason": "STOP"}]}
    return b"".join(f"data: {json.dumps(e)}\n\n".encode() for e in events)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(STEP, min_size=3, max_size=3))
def test_three_steps_keep_every_opaque_field_byte_exact(steps: list[dict[str, str]]) -> None:
    # covers G-63, C16
    answers = [parts_of(step, n) for n, step in enumerate(steps)]
    bodies = [(200, stream_of(a)) for a in answers] + [(200, stream_of([{"text": "done"}]))]
    model, server = model_for(*bodies)

    async def loop() -> None:
        messages: list[Message] = [UserMessage(content="go")]
        for _ in steps:
            response = await model.request(ModelRequest(messages=messages, tools=[WEATHER]))
            (call,) = response.message.tool_calls
            result = ToolMessage(tool_call_id=call.id, tool_name=call.name, content="ok")
            messages = [*messages, response.message, result]
        assert (await model.request(ModelRequest(messages=messages))).message.text == "done"

    asyncio.run(loop())
    expected: list[dict[str, Any]] = [{"role": "user", "parts": [{"text": "go"}]}]
    for n, parts in enumerate(answers):
        call = parts[-1]["functionCall"]
        response = {"id": call["id"], "name": "get_weather", "response": {"result": "ok"}}
        expected += [
            {"role": "model", "parts": parts},
            {"role": "user", "parts": [{"functionResponse": response}]},
        ]
        assert server.body(n + 1)["contents"] == expected
