"""Tool sources (the seam MCP servers use) and tools registered after construction."""

from __future__ import annotations

from collections.abc import Sequence

from bastion import Agent, tool
from bastion.agent import ToolOptions
from bastion.core import ToolMessage, ToolSourceErrorEvent
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Tool


@tool(side_effect_class="pure")
def ping() -> str:
    """Answer pong."""
    return "pong"


@tool(side_effect_class="pure")
def echo(text: str) -> str:
    """Echo the text."""
    return text


class ListSource:
    """A tool source whose list a test changes, and which can fail."""

    def __init__(self, name: str, tools: Sequence[Tool]) -> None:
        self.name = name
        self.listed: tuple[Tool, ...] = tuple(tools)
        self.fail: Exception | None = None
        self.asked = 0
        self.closed = 0

    async def list_tools(self) -> Sequence[Tool]:
        self.asked += 1
        if self.fail is not None:
            raise self.fail
        return self.listed

    async def aclose(self) -> None:
        self.closed += 1


def names(model: ScriptedModel, request: int) -> list[str]:
    return [d.name for d in model.requests[request].tools]


async def test_a_tool_registered_after_construction_is_shown_to_the_model() -> None:
    model = ScriptedModel([Turn(tool_calls=[Call("echo", {"text": "hi"})]), Turn(text="done")])
    agent = Agent("a", model=model, tools=[ping])
    agent.registry.register(echo)
    result = await agent.run("go")
    assert names(model, 0) == ["ping", "echo"]
    assert result.output == "done"
    assert result.state is not None
    reply = result.state.messages[-2]
    assert isinstance(reply, ToolMessage)
    assert (reply.tool_name, reply.content, reply.is_error) == ("echo", "hi", False)


async def test_a_tool_registered_mid_run_is_shown_and_run_from_the_next_step_only() -> None:
    agent: Agent[None, str]

    @tool(side_effect_class="pure")
    def install() -> str:
        """Register echo."""
        agent.registry.register(echo)
        return "installed"

    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("install", id="c1"), Call("echo", {"text": "early"}, id="c2")]),
            Turn(tool_calls=[Call("echo", {"text": "hi"}, id="c3")]),
            Turn(text="done"),
        ]
    )
    agent = Agent("a", model=model, tools=[install], tool_options=ToolOptions(max_parallel=1))
    before = agent.config.tools
    result = await agent.run("go")
    assert result.output == "done"
    assert names(model, 0) == ["install"]
    assert names(model, 1) == ["install", "echo"]
    assert result.state is not None
    replies = {m.tool_call_id: m for m in result.state.messages if isinstance(m, ToolMessage)}
    # Step 1 runs only what step 1 showed: echo was not in its tool set yet.
    assert replies["c2"].is_error
    assert "Unknown tool 'echo'" in replies["c2"].text
    assert (replies["c3"].content, replies["c3"].is_error) == ("hi", False)
    # A tool set is frozen: the registration made a new one.
    assert list(before.by_name) == ["install"]
    assert list(agent.config.tools.by_name) == ["install", "echo"]


async def test_a_source_is_asked_per_step_and_a_new_list_shows_at_the_next_step() -> None:
    source = ListSource("srv", [])

    @tool(side_effect_class="pure")
    def grow() -> str:
        """Add echo to the source's list."""
        source.listed = (grow, echo)
        return "grown"

    source.listed = (grow,)
    model = ScriptedModel([Turn(tool_calls=[Call("grow")]), Turn(text="done")])
    agent = Agent("a", model=model, tools=[source])
    result = await agent.run("go")
    assert result.output == "done"
    assert names(model, 0) == ["grow"]
    assert names(model, 1) == ["grow", "echo"]
    assert source.asked == 3  # at the start and before each of the two steps


async def test_a_failing_source_reports_one_typed_event_and_the_run_goes_on() -> None:
    source = ListSource("broken", [echo])
    source.fail = OSError("server not found")
    model = ScriptedModel([Turn(tool_calls=[Call("ping")]), Turn(text="done")])
    agent = Agent("a", model=model, tools=[ping, source])
    events = [e async for e in agent.stream("go")]
    errors = [e for e in events if isinstance(e, ToolSourceErrorEvent)]
    assert [(e.source, e.message) for e in errors] == [("broken", "OSError: server not found")]
    assert events[1] is errors[0]  # right after agent.start, before the first step
    assert events[-1].status == "completed"  # type: ignore[union-attr]
    assert names(model, 0) == ["ping"]


async def test_two_sources_with_one_tool_name_are_prefixed_and_closed_with_the_agent() -> None:
    one, two = (
        ListSource("one", [_mcp(echo, "one")]),
        ListSource("two", [_mcp(echo, "two")]),
    )
    model = ScriptedModel([Turn(tool_calls=[Call("two__echo", {"text": "x"})]), Turn(text="ok")])
    async with Agent("a", model=model, tools=[one, two]) as agent:
        result = await agent.run("go")
    assert names(model, 0) == ["echo", "two__echo"]
    assert result.output == "ok"
    assert (one.closed, two.closed) == (1, 1)


async def test_deferred_tools_of_a_source_are_found_through_tool_search() -> None:
    deferred = _mcp(echo, "srv", defer=True)
    source = ListSource("srv", [deferred])
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("tool_search", {"query": "echo text"})]),
            Turn(tool_calls=[Call("echo", {"text": "found"})]),
            Turn(text="done"),
        ]
    )
    agent = Agent("a", model=model, tools=[ping, source])
    result = await agent.run("go")
    assert names(model, 0) == ["ping", "tool_search"]
    assert names(model, 1) == ["ping", "tool_search", "echo"]
    assert result.output == "done"


def _mcp(t: Tool, source: str, *, defer: bool = False) -> Tool:
    from dataclasses import replace

    return replace(t, trust_class="mcp_derived", source=source, defer_loading=defer)
