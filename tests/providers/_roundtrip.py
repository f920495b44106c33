"""Shared by the per-protocol round-trip properties: opaque values and a tool-step loop."""

from __future__ import annotations

import asyncio

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from bastion.core import Message, Model, ModelRequest, ToolDefinition, ToolMessage, UserMessage

__all__ = ["OPAQUE", "PROPERTY", "WEATHER", "run_tool_steps"]

WEATHER = ToolDefinition(name="get_weather", description="d", parameters={})
# Any text a vendor may put in an opaque field (no lone surrogates: JSON cannot carry them).
OPAQUE = st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=30)
PROPERTY = settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def run_tool_steps(model: Model, steps: int) -> None:
    """``steps`` requests that each answer one tool call (result "ok"), then a last one.

    The scripted server answers the last request with the text ``done``.
    """

    async def loop() -> None:
        messages: list[Message] = [UserMessage(content="go")]
        for _ in range(steps):
            response = await model.request(ModelRequest(messages=messages, tools=[WEATHER]))
            (call,) = response.message.tool_calls
            result = ToolMessage(tool_call_id=call.id, tool_name=call.name, content="ok")
            messages = [*messages, response.message, result]
        final = await model.request(ModelRequest(messages=messages, tools=[WEATHER]))
        assert final.message.text == "done"

    asyncio.run(loop())
