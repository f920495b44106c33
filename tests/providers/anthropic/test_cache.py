"""Prompt caching: ``cache_control`` breakpoints on tools, system prompt and chosen turns.

SPEC C2 (cache usage).
"""

from __future__ import annotations

import pytest

from bastion.core import (
    AssistantMessage,
    ModelRequest,
    ReasoningPart,
    SystemMessage,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolMessage,
    UserError,
    UserMessage,
)
from bastion.providers.anthropic import PromptCache

from ._support import Server, transcript

WEATHER = ToolDefinition(name="get_weather", description="Weather.", parameters={})
TIME = ToolDefinition(name="get_time", description="Time.", parameters={})
EPHEMERAL = {"type": "ephemeral"}
CONVERSATION = ModelRequest(
    messages=[
        SystemMessage(content="You are terse."),
        UserMessage(content="Weather in Paris?"),
        AssistantMessage(
            parts=[ReasoningPart(text="Call the tool.", signature="sig-1")],
            tool_calls=[ToolCall(id="toolu_1", name="get_weather", arguments='{"q": "Paris"}')],
        ),
        ToolMessage(tool_call_id="toolu_1", tool_name="get_weather", content="18°C"),
    ],
    tools=[WEATHER, TIME],
)


async def test_breakpoints_on_tools_system_and_the_last_turn() -> None:
    server = Server(transcript("text"))
    await server.model(cache=PromptCache()).request(CONVERSATION)
    body = server.requests[0]
    assert body["tools"] == [
        {"name": "get_weather", "description": "Weather.", "input_schema": {}},
        {
            "name": "get_time",
            "description": "Time.",
            "input_schema": {},
            "cache_control": EPHEMERAL,
        },
    ]
    assert body["system"] == [
        {"type": "text", "text": "You are terse.", "cache_control": EPHEMERAL}
    ]
    assert body["messages"][-1] == {
        "role": "user",
        "content": [
            {
                "type": "tool_result",
                "tool_use_id": "toolu_1",
                "content": "18°C",
                "is_error": False,
                "cache_control": EPHEMERAL,
            }
        ],
    }
    assert "cache_control" not in str(body["messages"][:-1])


async def test_thinking_blocks_are_never_marked_themselves() -> None:
    # the API refuses cache_control on a thinking block
    server = Server(transcript("text"))
    await server.model(cache=PromptCache(tools=False, system=False, messages=2)).request(
        CONVERSATION
    )
    body = server.requests[0]
    assistant = body["messages"][1]["content"]
    assert assistant[0] == {"type": "thinking", "thinking": "Call the tool.", "signature": "sig-1"}
    assert assistant[1]["cache_control"] == EPHEMERAL  # the tool_use block after it
    assert body["messages"][2]["content"][0]["cache_control"] == EPHEMERAL
    assert "cache_control" not in str(body["messages"][0])
    assert body["system"] == "You are terse."
    assert all("cache_control" not in tool for tool in body["tools"])


async def test_one_hour_ttl() -> None:
    server = Server(transcript("text"))
    cache = PromptCache(tools=False, messages=0, ttl="1h")
    await server.model(cache=cache).request(CONVERSATION)
    assert server.requests[0]["system"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


async def test_no_cache_control_unless_asked() -> None:
    server = Server(transcript("text"))
    await server.model().request(CONVERSATION)
    assert "cache_control" not in str(server.requests[0])


def test_more_than_four_breakpoints_is_a_user_error() -> None:
    with pytest.raises(UserError, match="at most 4"):
        PromptCache(messages=3)
    with pytest.raises(UserError, match="0 or more"):
        PromptCache(messages=-1)


async def test_cache_usage_is_reported_and_priced() -> None:
    # covers C2
    server = Server(transcript("cache_usage"))
    response = await server.model(cache=PromptCache()).request(
        ModelRequest(messages=[UserMessage(content=[TextPart(text="Summarise the book.")])])
    )
    usage = response.usage
    assert usage.cache_write_tokens == 188086
    assert usage.cached_read_tokens == 0
    assert usage.prompt_tokens == 21 + 188086
    assert usage.provider_metrics == {
        "usage": {
            "input_tokens": 21,
            "cache_creation_input_tokens": 188086,
            "cache_read_input_tokens": 0,
            "output_tokens": 393,
        }
    }
    assert usage.unreported_requests == 0
