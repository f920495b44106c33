"""A server's question mid-call suspends the run; a person answers it, maybe elsewhere."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bastion import Agent
from bastion.core import Message, ToolMessage, UserError
from bastion.mcp import MCPServer
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive, InputAnswer

Make = Callable[..., MCPServer]

_SCRIPT = [Turn(tool_calls=[Call("release", {"version": "1.2"})]), Turn(text="done")]


@pytest.fixture
def counted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "count.txt"
    path.touch()
    monkeypatch.setenv("DEMO_COUNT_FILE", str(path))
    return path


def _agent(make: Make, store: str, script: list[Turn], **options: object) -> Agent:
    return Agent("ops", model=ScriptedModel(script), tools=[make(**options)], store=store)


def _tool_texts(messages: Sequence[Message]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def _released(path: Path) -> str:
    return path.read_text()


async def test_a_question_suspends_the_run_and_answers_resume_it_in_new_agents(
    stdio_demo: Make, tmp_path: Path, counted: Path
):  # each agent has its own server process: the answers outlive the MCP sessions
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with _agent(stdio_demo, store, _SCRIPT) as first:
        stream = first.stream("release 1.2")
        events = [event.type async for event in stream]
        suspended = stream.result
    assert suspended.status == "awaiting_approval"
    assert "tool.approval.requested" in events
    assert "tool.execute.end" not in events  # the call has no result: it runs again
    assert "tool.execute.error" not in events
    (asked,) = suspended.pending_approvals
    assert asked.input is not None
    assert asked.input.message == "Release 1.2?"
    assert asked.input.schema["required"] == ["ok"]
    assert asked.reason == "MCP server 'demo' asks: Release 1.2?"
    call_id = asked.tool_call_id

    async with _agent(stdio_demo, store, _SCRIPT[1:]) as second:
        again = await second.resume(
            suspended.run_id,
            directive=Directive(inputs=[InputAnswer(tool_call_id=call_id, content={"ok": True})]),
        )
    assert again.status == "awaiting_approval"  # the tool asked its second question
    (second_question,) = again.pending_approvals
    assert second_question.input is not None
    assert second_question.input.message == "Which channel?"
    assert _released(counted) == ""  # nothing released yet

    async with _agent(stdio_demo, store, _SCRIPT[1:]) as third:
        done = await third.resume(
            suspended.run_id,
            directive=Directive(
                inputs=[InputAnswer(tool_call_id=call_id, content={"channel": "stable"})]
            ),
        )
    assert done.status == "completed"
    assert done.output == "done"
    assert done.state is not None
    assert "1.2: released to stable" in _tool_texts(done.state.messages)[-1]
    assert _released(counted) == "release 1.2 stable\n"  # once, with both answers


async def test_a_declined_question_reaches_the_server_and_the_run_goes_on(
    stdio_demo: Make, tmp_path: Path, counted: Path
):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with _agent(stdio_demo, store, _SCRIPT) as agent:
        suspended = await agent.run("release 1.2")
        (asked,) = suspended.pending_approvals
        done = await agent.resume(
            suspended.run_id,
            directive=Directive(
                inputs=[InputAnswer(tool_call_id=asked.tool_call_id, action="decline")]
            ),
        )
    assert done.status == "completed"
    assert done.state is not None
    assert "1.2: not released (decline)" in _tool_texts(done.state.messages)[-1]
    assert _released(counted) == ""


async def test_answers_are_checked_against_the_question_before_anything_runs(
    stdio_demo: Make, tmp_path: Path, counted: Path
):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with _agent(stdio_demo, store, _SCRIPT) as agent:
        suspended = await agent.run("release 1.2")
        call_id = suspended.pending_approvals[0].tool_call_id
        wrong = [
            (
                InputAnswer(tool_call_id=call_id, content={"ok": "yes"}),
                "`ok`: 'yes' is not of type 'boolean'",
            ),
            (InputAnswer(tool_call_id=call_id, content={}), "'ok' is a required property"),
            (
                InputAnswer(tool_call_id=call_id, action="decline", content={"ok": True}),
                "no content",
            ),
            (InputAnswer(tool_call_id="nope", content={"ok": True}), "asked no question"),
        ]
        for answer, why in wrong:
            with pytest.raises(UserError, match=why):
                await agent.resume(suspended.run_id, directive=Directive(inputs=[answer]))
        both = Directive(
            approvals=[ApprovalDecision(tool_call_id=call_id, granted=True)],
            inputs=[InputAnswer(tool_call_id=call_id, content={"ok": True})],
        )
        with pytest.raises(UserError, match="decided more than once"):
            await agent.resume(suspended.run_id, directive=both)
        denied = await agent.resume(
            suspended.run_id,
            directive=Directive(
                approvals=[ApprovalDecision(tool_call_id=call_id, granted=False, reason="no")]
            ),
        )
    assert denied.status == "completed"  # a question can be refused like any call
    assert denied.state is not None
    assert _tool_texts(denied.state.messages)[-1] == "Denied: no"
    assert _released(counted) == ""


async def test_elicitation_decline_lets_the_server_go_on_without_suspending(
    stdio_demo: Make, tmp_path: Path, counted: Path
):
    store = f"sqlite:///{tmp_path / 'runs.db'}"
    async with _agent(stdio_demo, store, _SCRIPT, elicitation="decline") as agent:
        result = await agent.run("release 1.2")
    assert result.status == "completed"
    assert result.state is not None
    assert "1.2: not released (decline)" in _tool_texts(result.state.messages)[-1]


def test_a_bad_elicitation_option_is_a_user_error():
    with pytest.raises(UserError, match="elicitation must be 'suspend' or 'decline'"):
        MCPServer.stdio("server", elicitation="ask")


async def test_the_documented_example_runs():
    example = Path(__file__).parents[2] / "examples" / "mcp_questions.py"
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        str(example),
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.DEVNULL,
    )
    out, _ = await asyncio.wait_for(process.communicate(), 120)
    assert process.returncode == 0
    assert out.decode().splitlines() == [
        "awaiting_approval: Deploy web to production?",
        'deploy -> {"result":"web deployed"}',
        'release_notes -> {"result":"Faster search for everyone."}',
        "models used: test:scripted, test:writer",
        "completed: Deployed, notes written.",
    ]
