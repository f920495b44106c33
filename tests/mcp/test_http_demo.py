"""The demo server over streamable HTTP: a separate process, reached by URL."""

from __future__ import annotations

import asyncio

import anyio

from bastion import Agent
from bastion.core import ToolExecuteErrorEvent, ToolExecuteProgressEvent, ToolMessage
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import Directive, InputAnswer

from .conftest import HttpDemo


async def test_an_http_server_gets_the_headers_and_streams_progress(
    http_demo: HttpDemo,
):
    server = MCPServer.http(http_demo.url, headers={"Authorization": "Bearer t0ken"}, name="demo")
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("slow", {"steps": 2}), Call("authorization")]),
            Turn(text="42"),
        ]
    )
    async with Agent("a", model=model, tools=[server]) as agent:
        events = [e async for e in agent.stream("go")]
    progress = [e.message for e in events if isinstance(e, ToolExecuteProgressEvent)]
    assert progress == ["step 1", "step 2"]
    (sent,) = [e for e in events if e.type == "tool.execute.end" and e.tool_name == "authorization"]
    assert '"result":"Bearer t0ken"' in sent.result
    assert events[-1].status == "completed"  # type: ignore[union-attr]


async def test_two_hundred_concurrent_calls_share_one_connection(http_demo: HttpDemo):
    server = MCPServer.http(http_demo.url, name="demo")

    async def opener() -> None:
        # The first request opens the connection inside a cancel scope that then ends:
        # the connection must not belong to it.
        with anyio.CancelScope():
            await server.call_tool("add", {"a": 0, "b": 0})

    await asyncio.create_task(opener())

    async def call(i: int) -> int:
        with anyio.fail_after(60):  # each request in its own cancel scope, as a web app's
            result = await server.call_tool("add", {"a": i, "b": 1})
        return int(result.structured_content["result"])

    try:
        answers = await asyncio.gather(*(asyncio.create_task(call(i)) for i in range(200)))
        assert answers == [i + 1 for i in range(200)]
        assert server.restarts == 0
    finally:
        await server.aclose()


async def test_a_restarted_http_server_is_reconnected_after_a_failed_call(http_demo: HttpDemo):
    server = MCPServer.http(http_demo.url, name="demo", timeout=20)
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("add", {"a": 1, "b": 1})]),
            Turn(tool_calls=[Call("add", {"a": 2, "b": 2})]),
            Turn(tool_calls=[Call("add", {"a": 3, "b": 3})]),
            Turn(text="done"),
        ]
    )
    async with Agent("a", model=model, tools=[server]) as agent:
        stream = agent.stream("go")
        seen = 0
        async for event in stream:
            if event.type in ("tool.execute.end", "tool.execute.error"):
                seen += 1
                if seen == 1:
                    await http_demo.kill()  # kill -9 of the whole server
                if seen == 2:
                    await http_demo.restart()
        result = stream.result
    replies = [m for m in result.state.messages if isinstance(m, ToolMessage)]  # type: ignore[union-attr]
    assert [r.is_error for r in replies] == [False, True, False]
    assert "went away" in str(replies[1].content) or "did not start" in str(replies[1].content)
    assert "6" in str(replies[2].content)
    assert result.status == "completed"


async def test_a_server_that_cannot_be_reached_is_a_typed_event_not_a_crashed_run():
    server = MCPServer.http("http://127.0.0.1:9/mcp", name="nowhere", connect_timeout=5)
    model = ScriptedModel([Turn(text="fine without it")])
    async with Agent("a", model=model, tools=[server]) as agent:
        events = [e async for e in agent.stream("go")]
    errors = [e for e in events if e.type == "tool.source.error"]
    assert len(errors) == 1
    assert "nowhere" in errors[0].message
    assert events[-1].status == "completed"  # type: ignore[union-attr]
    assert not [e for e in events if isinstance(e, ToolExecuteErrorEvent)]


async def test_a_server_restarted_while_idle_gets_a_new_session_without_an_error(
    http_demo: HttpDemo,
):
    server = MCPServer.http(http_demo.url, name="demo")
    try:
        first = await server.call_tool("pid")
        await http_demo.restart()  # same port: the old session id is now unknown (404)
        second = await server.call_tool("pid")  # rejected unrun, so resent on a new session
        assert not second.is_error
        assert second.structured_content != first.structured_content
        assert server.restarts == 1
    finally:
        await server.aclose()


async def test_a_legacy_sse_server_serves_tools_and_progress():
    demo = HttpDemo("sse")
    await demo.start()
    server = MCPServer.sse(demo.url, name="legacy")
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("slow", {"steps": 2}), Call("add", {"a": 1, "b": 2})]),
            Turn(text="3"),
        ]
    )
    try:
        async with Agent("a", model=model, tools=[server]) as agent:
            events = [e async for e in agent.stream("go")]
    finally:
        await demo.kill()
    assert [e.message for e in events if isinstance(e, ToolExecuteProgressEvent)] == [
        "step 1",
        "step 2",
    ]
    (added,) = [e for e in events if e.type == "tool.execute.end" and e.tool_name == "add"]
    assert '"result":3' in added.result  # type: ignore[union-attr]


async def test_over_http_a_question_suspends_and_sampling_is_served(http_demo: HttpDemo):
    sampler = ScriptedModel([Turn(text="brief")], name="sampler")
    server = MCPServer.http(http_demo.url, name="demo", sampling=sampler)
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("confirm", {"action": "deploy"})]),
            Turn(tool_calls=[Call("summarize", {"text": "a long story"})]),
            Turn(text="done"),
        ]
    )
    async with Agent("a", model=model, tools=[server]) as agent:
        suspended = await agent.run("go")
        assert suspended.status == "awaiting_approval"
        (pending,) = suspended.pending_approvals
        assert pending.input is not None
        assert pending.input.message == "Really deploy?"
        await http_demo.restart()  # the answer does not need the session that asked
        answer = InputAnswer(tool_call_id=pending.tool_call_id, content={"ok": True})
        assert suspended.state is not None
        done = await agent.run(suspended.state, directive=Directive(inputs=[answer]))
    assert done.status == "completed"
    assert done.state is not None
    confirmed, summary = [m for m in done.state.messages if isinstance(m, ToolMessage)]
    assert "deploy: confirmed" in str(confirmed.content)
    assert "summary by test:sampler: brief" in str(summary.content)
