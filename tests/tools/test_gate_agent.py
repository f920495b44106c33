"""The ordered tool-call gate, through the agent (SPEC C4, T-12)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import ToolOptions
from bastion.core import ToolCall, ToolMessage
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import (
    Allow,
    Ask,
    Deny,
    Mock,
    Rewrite,
    Tool,
    ToolArgumentsError,
    ToolCallDecision,
    ToolCallRequest,
)

ran: list[str] = []


@tool(side_effect_class="side_effecting")
def delete(path: str) -> str:
    """Delete a file."""
    ran.append(f"delete {path}")
    return f"deleted {path}"


@tool(side_effect_class="side_effecting", needs_approval=True)
def deploy(env: str) -> str:
    """Deploy."""
    ran.append(f"deploy {env}")
    return f"deployed {env}"


@pytest.fixture(autouse=True)
def _reset() -> None:
    ran.clear()


def one_call(name: str, args: dict[str, Any] | str) -> ScriptedModel:
    return ScriptedModel([Turn(tool_calls=[Call(name, args, id="c1")]), "done"])


async def tool_result(
    model: ScriptedModel, tools: list[Tool], **options: Any
) -> tuple[ToolMessage, str]:
    result = await Agent("a", model=model, tools=tools, **options).run("go")
    (message,) = [m for m in result.messages if isinstance(m, ToolMessage)]
    return message, result.status


def hook_returning(decision: ToolCallDecision | None, seen: list[ToolCallRequest]) -> Any:
    def hook(request: ToolCallRequest) -> ToolCallDecision | None:
        seen.append(request)
        return decision

    return hook


async def test_deny_tools_blocks_by_name_pattern_before_anything_else() -> None:
    # covers C4
    seen: list[ToolCallRequest] = []
    message, status = await tool_result(
        one_call("delete", {"path": "/"}),
        [delete],
        tool_options=ToolOptions(deny=["del*"], before_call=[hook_returning(Allow(), seen)]),
    )
    assert message.content == "Tool 'delete' is not allowed in this run."
    assert message.is_error
    assert status == "completed"
    assert seen == []  # the hooks never saw it
    assert ran == []


async def test_deny_hook_turns_the_call_into_an_approval_denied_error() -> None:
    # covers C4
    seen: list[ToolCallRequest] = []
    message, _ = await tool_result(
        one_call("delete", {"path": "/etc"}),
        [delete],
        tool_options=ToolOptions(before_call=[hook_returning(Deny("not under /etc"), seen)]),
    )
    assert message.content == "not under /etc"
    assert message.is_error
    assert ran == []
    assert seen[0].arguments == {"path": "/etc"}
    assert seen[0].tool.name == "delete"
    assert seen[0].ctx.run_id.startswith("run")


async def test_mock_hook_returns_a_result_without_running_the_tool() -> None:
    # covers C4
    message, _ = await tool_result(
        one_call("delete", {"path": "x"}),
        [delete],
        tool_options=ToolOptions(before_call=[hook_returning(Mock({"dry_run": True}), [])]),
    )
    assert message.content == '{"dry_run":true}'
    assert ran == []


async def test_rewrite_hook_replaces_arguments_and_they_are_validated_again() -> None:
    # covers C4
    message, _ = await tool_result(
        one_call("delete", {"path": "../../x"}),
        [delete],
        tool_options=ToolOptions(before_call=[hook_returning(Rewrite({"path": "x"}), [])]),
    )
    assert message.content == "deleted x"
    assert ran == ["delete x"]

    bad, _ = await tool_result(
        one_call("delete", {"path": "x"}),
        [delete],
        tool_options=ToolOptions(before_call=[hook_returning(Rewrite({"path": 3}), [])]),
    )
    assert bad.is_error
    assert "path" in bad.content
    assert ran == ["delete x"]


async def test_first_decision_wins_and_none_passes_on() -> None:
    # covers C4
    first: list[ToolCallRequest] = []
    second: list[ToolCallRequest] = []
    third: list[ToolCallRequest] = []
    message, _ = await tool_result(
        one_call("delete", {"path": "x"}),
        [delete],
        tool_options=ToolOptions(
            before_call=[
                hook_returning(None, first),
                hook_returning(Deny("second says no"), second),
                hook_returning(Allow(), third),
            ]
        ),
    )
    assert message.content == "second says no"
    assert (len(first), len(second), len(third)) == (1, 1, 0)


async def test_allow_skips_the_approval_a_tool_asks_for_and_ask_forces_one() -> None:
    # covers C4, T-07
    message, status = await tool_result(
        one_call("deploy", {"env": "prod"}),
        [deploy],
        tool_options=ToolOptions(before_call=[hook_returning(Allow(), [])]),
    )
    assert (message.content, status) == ("deployed prod", "completed")

    asked = await Agent(
        "a",
        model=one_call("delete", {"path": "x"}),
        tools=[delete],
        tool_options=ToolOptions(before_call=[hook_returning(Ask("deletes are reviewed"), [])]),
    ).run("go")
    assert asked.status == "awaiting_approval"
    assert asked.pending_approvals[0].reason == "deletes are reviewed"
    assert ran == ["deploy prod"]


async def test_async_hooks_are_awaited() -> None:
    # covers C4
    async def deny_later(request: ToolCallRequest) -> ToolCallDecision:
        return Deny(f"no {request.call.name}")

    message, _ = await tool_result(
        one_call("delete", {"path": "x"}),
        [delete],
        tool_options=ToolOptions(before_call=[deny_later]),
    )
    assert message.content == "no delete"


async def test_a_hook_returning_something_else_fails_the_run_clearly() -> None:
    result = await Agent(
        "a",
        model=one_call("delete", {"path": "x"}),
        tools=[delete],
        tool_options=ToolOptions(before_call=[hook_returning("yes", [])]),  # pyright: ignore[reportArgumentType]  # wrong on purpose
    ).run("go")
    assert result.status == "failed"
    assert result.error is not None
    assert "return Allow(), Deny(reason)" in result.error.message
    assert ran == []


async def test_repair_hook_gets_one_round_to_fix_invalid_arguments() -> None:
    # covers T-12
    repairs: list[tuple[ToolCall, ToolArgumentsError]] = []

    def repair(call: ToolCall, error: ToolArgumentsError) -> dict[str, Any] | None:
        repairs.append((call, error))
        raw = json.loads(call.arguments)
        return {"path": str(raw.get("file", ""))} if "file" in raw else None

    message, _ = await tool_result(
        one_call("delete", {"file": "a.txt"}), [delete], tool_options=ToolOptions(repair=repair)
    )
    assert message.content == "deleted a.txt"
    assert len(repairs) == 1
    assert repairs[0][0].arguments == '{"file": "a.txt"}'

    unrepaired, _ = await tool_result(
        one_call("delete", {"oops": 1}), [delete], tool_options=ToolOptions(repair=repair)
    )
    assert unrepaired.is_error
    assert "path" in unrepaired.content
    assert ran == ["delete a.txt"]


def still_invalid(call: ToolCall, error: ToolArgumentsError) -> str:
    return "[1, 2]"


async def test_repair_that_is_still_invalid_is_an_invalid_input_error() -> None:
    # covers T-12
    message, _ = await tool_result(
        one_call("delete", "{not json"), [delete], tool_options=ToolOptions(repair=still_invalid)
    )
    assert message.is_error
    assert ran == []


async def test_gate_errors_are_tool_errors_the_model_can_react_to() -> None:
    # covers C4
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("delete", {"path": "x"}, id="c1")]),
            Turn(tool_calls=[Call("delete", {"path": "y"}, id="c2")]),
            "gave up",
        ]
    )
    seen: list[ToolCallRequest] = []

    def only_y(request: ToolCallRequest) -> ToolCallDecision | None:
        seen.append(request)
        return None if request.arguments["path"] == "y" else Deny("only y")

    events = [
        e
        async for e in Agent(
            "a", model=model, tools=[delete], tool_options=ToolOptions(before_call=[only_y])
        ).stream("go")
    ]
    errors = [e for e in events if e.type == "tool.execute.error"]
    assert [(e.tool_call_id, e.kind, e.message) for e in errors] == [
        ("c1", "approval_denied", "only y")
    ]
    assert ran == ["delete y"]


async def test_a_gated_call_with_invalid_arguments_fails_at_once_and_no_human_is_asked() -> None:
    # SPEC §3.1 scenario 11: validation comes before the approval requirement.
    # covers C4, T-12
    model = ScriptedModel([Turn(tool_calls=[Call("deploy", {"env": 7}, id="c1")]), "done"])
    agent = Agent("a", model=model, tools=[deploy])
    events = [e async for e in agent.stream("go")]
    asked = [e.type for e in events if e.type.startswith("tool.approval")]
    assert asked == []
    (error,) = [e for e in events if e.type == "tool.execute.error"]
    assert (error.tool_call_id, error.kind) == ("c1", "invalid_input")
    result = events[-1]
    assert result.type == "agent.end"
    assert result.status == "completed"  # not awaiting_approval: nothing was pending
    assert ran == []
