"""MCP tools through an agent, against the demo server over stdio."""

from __future__ import annotations

import os
import signal
from collections.abc import Callable
from typing import Any

from bastion import Agent
from bastion.core import (
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteProgressEvent,
    ToolMessage,
)
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn

Make = Callable[..., MCPServer]


def tool_messages(result: Any) -> list[ToolMessage]:
    return [m for m in result.state.messages if isinstance(m, ToolMessage)]


async def test_tools_are_listed_lazily_and_called_with_structured_content(stdio_demo: Make):
    server = stdio_demo()
    assert not server.connected  # nothing starts before a run needs it
    model = ScriptedModel([Turn(tool_calls=[Call("add", {"a": 2, "b": 3})]), Turn(text="5")])
    async with Agent("a", model=model, tools=[server]) as agent:
        result = await agent.run("2+3?")
        advertised = {d.name: d for d in model.requests[0].tools}
        assert {"add", "slow", "report_link"} <= set(advertised)
        assert advertised["add"].parameters["required"] == ["a", "b"]  # the server's schema
        (reply,) = tool_messages(result)
        assert '{"result":5}' in str(reply.content)
        assert "untrusted-data begin" in str(reply.content)  # MCP output is wrapped
        assert agent.config.tools.by_name["add"].trust_class == "mcp_derived"
        assert agent.config.tools.by_name["add"].side_effect_class == "external_stateful"
        assert agent.config.tools.by_name["add"].oracle_key == "tool:demo:add"
        assert server.connected
    assert not server.connected  # closed with the agent


async def test_progress_becomes_tool_progress_events_in_order(stdio_demo: Make):
    model = ScriptedModel([Turn(tool_calls=[Call("slow", {"steps": 3})]), Turn(text="ok")])
    async with Agent("a", model=model, tools=[stdio_demo()]) as agent:
        events = [e async for e in agent.stream("go")]
    progress = [
        (e.current, e.total, e.message) for e in events if isinstance(e, ToolExecuteProgressEvent)
    ]
    assert progress == [(1, 3, "step 1"), (2, 3, "step 2"), (3, 3, "step 3")]
    end = next(e for e in events if isinstance(e, ToolExecuteEndEvent))
    assert "done in 3 steps" in end.result


async def test_is_error_results_are_tool_errors_the_model_reads(stdio_demo: Make):
    model = ScriptedModel([Turn(tool_calls=[Call("fail", {"reason": "no"})]), Turn(text="sorry")])
    async with Agent("a", model=model, tools=[stdio_demo()]) as agent:
        events = [e async for e in agent.stream("go")]
    (error,) = [e for e in events if isinstance(e, ToolExecuteErrorEvent)]
    assert error.kind == "execution_failed"
    assert "refused: no" in error.message
    assert events[-1].status == "completed"  # type: ignore[union-attr]


async def test_a_server_that_dies_mid_call_fails_that_call_and_restarts_for_the_next(
    stdio_demo: Make,
):
    server = stdio_demo()
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("crash")]),
            Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
            Turn(text="recovered"),
        ]
    )
    async with Agent("a", model=model, tools=[server]) as agent:
        result = await agent.run("go")
    crashed, added = tool_messages(result)
    assert crashed.is_error
    assert "went away during the call to 'crash'" in str(crashed.content)
    assert "may or may not have taken effect" in str(crashed.content)
    assert not added.is_error
    assert "2" in str(added.content)
    assert result.output == "recovered"
    assert server.restarts == 1


async def test_a_server_killed_with_sigkill_is_restarted_by_the_next_call(stdio_demo: Make):
    server = stdio_demo(idempotent=["pid"])  # safe to send again if the first send was lost
    first = await server.call_tool("pid")
    os.kill(int(first.structured_content["result"]), signal.SIGKILL)
    second = await server.call_tool("pid")
    assert second.structured_content != first.structured_content
    assert not second.is_error
    assert server.restarts == 1


async def test_an_idempotent_tool_is_retried_once_after_the_server_died(stdio_demo: Make):
    server = stdio_demo(idempotent=["crash"])
    model = ScriptedModel([Turn(tool_calls=[Call("crash")]), Turn(text="done")])
    async with Agent("a", model=model, tools=[server]) as agent:
        result = await agent.run("go")
    (reply,) = tool_messages(result)
    assert reply.is_error  # crashes again on the retry: two attempts, then the error
    assert "retried once" in str(reply.content)
    assert server.restarts == 2


async def test_tools_list_changed_makes_the_next_step_show_the_new_tool(stdio_demo: Make):
    model = ScriptedModel(
        [Turn(tool_calls=[Call("grow")]), Turn(tool_calls=[Call("extra")]), Turn(text="ok")]
    )
    async with Agent("a", model=model, tools=[stdio_demo()]) as agent:
        result = await agent.run("go")
    assert "extra" not in [d.name for d in model.requests[0].tools]
    assert "extra" in [d.name for d in model.requests[1].tools]
    assert "extra!" in str(tool_messages(result)[1].content)


async def test_cancelling_the_run_cancels_the_request_on_the_server(stdio_demo: Make):
    server = stdio_demo()
    model = ScriptedModel([Turn(tool_calls=[Call("hang")])])
    async with Agent("a", model=model, tools=[server]) as agent:
        stream = agent.stream("go")
        async for event in stream:
            if event.type == "tool.execute.progress":  # the server is running the call
                stream.abort()
        assert stream.result.status == "aborted"
        seen = await server.call_tool("was_cancelled")
    assert seen.structured_content == {"result": True}


async def test_a_call_past_its_deadline_is_a_timeout_error(stdio_demo: Make):
    model = ScriptedModel([Turn(tool_calls=[Call("hang")]), Turn(text="gave up")])
    async with Agent("a", model=model, tools=[stdio_demo(timeout=0.3)]) as agent:
        events = [e async for e in agent.stream("go")]
    (error,) = [e for e in events if isinstance(e, ToolExecuteErrorEvent)]
    assert error.kind == "timeout"
    assert events[-1].status == "completed"  # type: ignore[union-attr]


async def test_injected_instructions_in_mcp_output_are_stripped_and_wrapped(stdio_demo: Make):
    model = ScriptedModel([Turn(tool_calls=[Call("injected")]), Turn(text="ok")])
    async with Agent("a", model=model, tools=[stdio_demo()]) as agent:
        result = await agent.run("go")
    (reply,) = tool_messages(result)
    text = str(reply.content)
    assert "Weather: sunny." in text
    assert "Ignore all previous instructions" not in text
    assert "untrusted-data begin" in text


async def test_a_resource_link_is_a_handle_read_result_pages(stdio_demo: Make):  # covers G-43
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("report_link")]),
            Turn(
                tool_calls=[
                    Call(
                        "read_result",
                        {"handle": "mcp:demo:demo://report", "start_line": 2, "end_line": 3},
                    )
                ]
            ),
            Turn(text="read"),
        ]
    )
    async with Agent("a", model=model, tools=[stdio_demo()]) as agent:
        result = await agent.run("go")
    link, page = tool_messages(result)
    assert "read_result(handle='mcp:demo:demo://report')" in str(link.content)
    assert "line 300" not in str(link.content)  # not inlined
    assert "line 1: quarterly figures\nline 2: quarterly figures" in str(page.content)
    assert str(page.content).startswith("[lines 2-3 of")


async def test_prompts_serve_as_instructions(stdio_demo: Make):
    server = stdio_demo()
    model = ScriptedModel([Turn(text="ok")])
    agent = Agent(
        "a",
        model=model,
        tools=[server],
        instructions=server.instructions("reviewer", {"language": "French"}),
    )
    async with agent:
        await agent.run("review this")
    assert model.requests[0].messages[0].content == "You review code. Answer in French."  # type: ignore[union-attr]


async def test_elicitation_is_answered_by_on_elicit_or_declined(stdio_demo: Make):
    asked: list[tuple[str, list[str]]] = []

    async def answer(message: str, schema: dict[str, Any]) -> dict[str, Any] | None:
        asked.append((message, list(schema["properties"])))
        return {"ok": True}

    answered = stdio_demo(on_elicit=answer)
    result = await answered.call_tool("confirm", {"action": "deploy"})
    assert result.structured_content == {"result": "deploy: confirmed"}
    assert asked == [("Really deploy?", ["ok"])]
    declined = await stdio_demo().call_tool("confirm", {"action": "deploy"})
    assert declined.structured_content == {"result": "deploy: decline"}
