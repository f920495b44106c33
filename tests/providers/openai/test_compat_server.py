"""An agent against a real OpenAI-compatible server process, over a real socket."""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.core import ModelSettings
from bastion.providers.openai import ChatParams, openai_compatible_model

SERVER = Path(__file__).with_name("compat_server.py")


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
async def server() -> AsyncIterator[tuple[str, asyncio.subprocess.Process]]:
    process = await asyncio.create_subprocess_exec(
        sys.executable, str(SERVER), stdout=asyncio.subprocess.PIPE
    )
    assert process.stdout is not None
    port = int(await process.stdout.readline())  # the server is listening once it prints
    try:
        yield f"http://127.0.0.1:{port}/v1", process
    finally:
        if process.returncode is None:
            process.terminate()
            await process.wait()


async def _bodies(process: asyncio.subprocess.Process, count: int) -> list[Any]:
    assert process.stdout is not None
    return [json.loads(await process.stdout.readline()) for _ in range(count)]


@pytest.mark.parametrize("stream", [True, False])
async def test_an_agent_runs_a_tool_loop_against_a_real_server(
    server: tuple[str, asyncio.subprocess.Process], stream: bool
) -> None:
    #
    url, process = server
    model = openai_compatible_model("llamacpp:qwen", base_url=url)
    agent = Agent("adder", model=model, tools=[add], model_settings=ModelSettings(stream=stream))
    result = await agent.run("What is 19 + 23?")
    assert result.status == "completed", result.error
    assert result.text == "42"
    first, second = await _bodies(process, 2)
    assert first["stream"] is stream
    assert ("stream_options" in first) is stream
    assert second["messages"][1] == {
        "role": "assistant",
        "content": "",
        "tool_calls": [
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 19, "b": 23}'},
            }
        ],
    }
    if stream:  # the server streamed no usage: not reported, not zero
        assert result.usage.unreported_requests == 2
    else:
        assert (result.usage.prompt_tokens, result.usage.unreported_requests) == (62, 0)


async def test_content_null_gets_the_servers_500_as_a_bad_request_not_a_retry(
    server: tuple[str, asyncio.subprocess.Process],
) -> None:
    url, process = server
    model = openai_compatible_model(
        "llamacpp:qwen", base_url=url, params=ChatParams(tool_call_content="null")
    )
    agent = Agent("adder", model=model, tools=[add])
    result = await agent.run("What is 19 + 23?")
    assert result.status == "failed"
    assert "must contain either 'content' or 'tool_calls'" in str(result.error)
    process.terminate()
    await process.wait()
    assert process.stdout is not None
    sent = (await process.stdout.read()).decode().splitlines()
    assert len(sent) == 2  # the first call, then one refused request: never retried
