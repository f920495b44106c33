"""A server's sampling requests, served by a configured model under the run's governor."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from bastion import Agent, GovernanceOptions
from bastion.core import SystemMessage, ToolMessage, Usage, UserError, UserMessage
from bastion.governance import Limit
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn

Make = Callable[..., MCPServer]


def _summaries(*texts: str) -> ScriptedModel:
    calls = [Turn(tool_calls=[Call("summarize", {"text": t})]) for t in texts]
    return ScriptedModel([*calls, Turn(text="ok")])


async def test_sampling_uses_the_configured_model_and_joins_the_run_usage(stdio_demo: Make):
    spent = Usage(prompt_tokens=30, completion_tokens=5, requests=1)
    sampler = ScriptedModel([Turn(text="short and sweet", usage=spent)], name="sampler")
    agent = Agent("a", model=_summaries("a long text"), tools=[stdio_demo(sampling=sampler)])
    async with agent:
        result = await agent.run("go")
    assert result.state is not None
    (answer,) = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert not answer.is_error
    assert "summary by test:sampler: short and sweet" in str(answer.content)
    (request,) = sampler.requests
    assert [type(m) for m in request.messages] == [SystemMessage, UserMessage]
    assert request.messages[0].content == "Summarize in five words."  # type: ignore[union-attr]
    assert request.messages[1].content == "a long text"  # type: ignore[union-attr]
    assert request.settings.max_tokens == 100
    assert result.usage_by_model["test:sampler"].prompt_tokens == 30  # counted into the run


async def test_sampling_passes_the_governor_per_server_and_per_model(stdio_demo: Make):
    sampler = ScriptedModel([Turn(text="one"), Turn(text="two")], name="sampler")
    agent = Agent(
        "a",
        model=_summaries("first", "second"),
        tools=[stdio_demo(sampling=sampler)],
        governance=GovernanceOptions(
            oracles={"mcp:demo:sampling": [Limit(type="calls", max=1, window="invocation")]}
        ),
    )
    async with agent:
        result = await agent.run("go")
    assert result.state is not None
    first, second = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert "summary by test:sampler: one" in str(first.content)
    assert second.is_error  # the server's second request was refused: its tool failed
    assert "Limit exceeded on 'mcp:demo:sampling'" in str(second.content)
    assert len(sampler.requests) == 1  # the model was not called for it


async def test_sampling_is_off_unless_enabled(stdio_demo: Make):
    agent = Agent("a", model=_summaries("text"), tools=[stdio_demo()])
    async with agent:
        result = await agent.run("go")
    assert result.state is not None
    (answer,) = [m for m in result.state.messages if isinstance(m, ToolMessage)]
    assert answer.is_error  # the client told the server it cannot sample
    assert "Sampling not supported" in str(answer.content)


def test_a_bad_sampling_model_is_a_user_error_at_configuration():
    with pytest.raises(UserError, match="not of the form 'provider:model'"):
        MCPServer.stdio("server", sampling="gpt-4")
    with pytest.raises(UserError, match="sampling must be a Model"):
        MCPServer.stdio("server", sampling=42)
