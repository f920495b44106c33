"""Code mode through the agent: the model writes Python that calls the tools in a sandbox.

SPEC G-46..G-52. Every script runs in a real pydantic-monty worker.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from dataclasses import replace
from typing import Any, Literal

import pytest

from bastion import Agent, ToolOptions, tool
from bastion.core import ToolMessage
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalConfig, CodeModeConfig, Deny, ToolCallRequest

_ITEMS = [{"id": i, "name": f"item-{i}", "price": i * 10, "notes": "x" * 150} for i in range(12)]
_calls: list[int] = []


@tool(side_effect_class="read_only")
def list_items(page: int) -> list[dict[str, Any]]:
    """List one page of the catalogue (about 2 KB of JSON)."""
    _calls.append(page)
    return _ITEMS


@tool(side_effect_class="read_only")
def get_weather(city: str, unit: Literal["c", "f"] = "c") -> dict[str, Any]:
    """Current weather for a city.

    Args:
        city: City name.
        unit: Temperature unit.
    """
    return {"city": city, "temp": 21, "unit": unit}


@tool(side_effect_class="side_effecting", needs_approval=True)
def delete_everything(confirm: bool) -> str:
    """Delete all data."""
    _calls.append(-1)
    return "deleted"


@pytest.fixture(autouse=True)
def _reset() -> None:
    _calls.clear()


@pytest.fixture
async def closing() -> AsyncIterator[list[Agent[Any, Any]]]:
    agents: list[Agent[Any, Any]] = []
    yield agents
    for agent in agents:
        await agent.aclose()


def _code_agent(
    model: ScriptedModel,
    agents: list[Agent[Any, Any]],
    code_mode: CodeModeConfig | None = None,
    tool_options: ToolOptions | None = None,
) -> Agent[Any, Any]:
    options = tool_options or ToolOptions()
    agent: Agent[Any, Any] = Agent(
        "coder",
        model=model,
        tools=[list_items, get_weather, delete_everything],
        tool_options=replace(options, invocation="code-mode", code_mode=code_mode),
    )
    agents.append(agent)
    return agent


def _tool_messages(model: ScriptedModel, step: int) -> list[ToolMessage]:
    return [m for m in model.requests[step].messages if isinstance(m, ToolMessage)]


def _text(message: ToolMessage) -> str:
    assert isinstance(message.content, str)
    return message.content


_AGGREGATE = """\
total = 0
count = 0
for page in range(10):
    items = await tools.list_items(page=page)
    count += len(items)
    total += sum(item["price"] for item in items)
{"count": count, "total": total}
"""


async def test_only_the_aggregate_enters_the_context(closing: list[Agent[Any, Any]]) -> None:
    # covers G-46, G-47, G-49
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("code_execute", {"source": _AGGREGATE})]),
            "120 items worth 6600.",
        ]
    )
    agent = _code_agent(model, closing)

    result = await agent.run("How much is the catalogue worth?")

    result.raise_for_status()
    assert [d.name for d in model.requests[0].tools] == ["code_execute", "code_search"]
    assert _calls == list(range(10))  # the real tool ran 10 times, through the executor
    [message] = _tool_messages(model, 1)
    assert message.tool_name == "code_execute"
    assert _text(message) == '{"count":120,"total":6600}'
    assert not message.is_error
    # Every in-script call is audited like a direct one (G-49).
    counters = agent.audit.counters.snapshot()
    assert counters["tool.executor.calls.total"] == 11


async def test_pool_is_reused_across_scripts(closing: list[Agent[Any, Any]]) -> None:
    # covers G-47
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("code_execute", {"source": "1 + 1"})]),
            Turn(tool_calls=[Call("code_execute", {"source": "x = 'a'\nx * 3"})]),
            "done",
        ]
    )
    agent = _code_agent(model, closing)
    assert agent.config.code_mode is not None
    assert not agent.config.code_mode.sandbox.started

    await agent.run("go")

    assert agent.config.code_mode.sandbox.started
    assert [_text(m) for m in _tool_messages(model, 2)] == ["2", "aaa"]
    await agent.aclose()
    assert not agent.config.code_mode.sandbox.started


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        ("open('/etc/passwd').read()", "PermissionError: Permission denied: '/etc/passwd'"),
        ("import socket", "ModuleNotFoundError: No module named 'socket'"),
        ("__import__('os')", "NameError: name '__import__' is not defined"),
        ("import subprocess", "ModuleNotFoundError: No module named 'subprocess'"),
        ("while True:\n    pass", "TimeoutError: feed time limit exceeded"),
        ("x = [0] * (10**9)", "MemoryError: memory limit exceeded"),
    ],
    ids=["file", "socket", "dunder-import", "subprocess", "infinite-loop", "memory-bomb"],
)
async def test_escape_attempts_fail_cleanly_and_the_run_continues(
    closing: list[Agent[Any, Any]], source: str, expected: str
) -> None:
    # covers G-50
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("code_execute", {"source": source})]),
            Turn(tool_calls=[Call("code_execute", {"source": "6 * 7"})]),
            "recovered",
        ]
    )
    agent = _code_agent(model, closing, code_mode=CodeModeConfig(timeout=0.05))

    result = await agent.run("try it")

    result.raise_for_status()
    assert result.output == "recovered"
    [failed] = _tool_messages(model, 1)
    assert failed.is_error
    assert _text(failed).startswith("Tool 'code_execute' failed: CodeExecutionError: ")
    assert expected in _text(failed)
    assert _text(_tool_messages(model, 2)[1]) == "42"  # the sandbox still works


async def test_approval_gated_tool_is_not_callable_from_code(
    closing: list[Agent[Any, Any]],
) -> None:
    # covers G-51
    source = (
        "try:\n"
        "    await tools.delete_everything(confirm=True)\n"
        "    r = 'ran'\n"
        "except AttributeError as e:\n"
        "    r = str(e)\n"
        "r"
    )
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("code_execute", {"source": source})]),
            Turn(tool_calls=[Call("code_search", {"query": "delete"})]),
            "ok",
        ]
    )
    agent = _code_agent(model, closing)

    await agent.run("delete it all")

    assert _calls == []
    assert _text(_tool_messages(model, 1)[0]) == (
        "'tools' object has no attribute 'delete_everything'"
    )
    assert _text(_tool_messages(model, 2)[1]).startswith("No tool matches 'delete'.")
    assert "delete_everything" not in model.requests[0].tools[0].description


async def test_approval_policy_excludes_listed_tools(closing: list[Agent[Any, Any]]) -> None:
    # covers G-48, G-51
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("code_search", {"query": "*"})]),
            "ok",
        ]
    )
    _code_agent(
        model, closing, tool_options=ToolOptions(approval=ApprovalConfig(policy=["get_weather"]))
    )
    agent = closing[0]

    await agent.run("what can you do?")

    [listing] = _tool_messages(model, 1)
    assert _text(listing) == (
        "await tools.list_items(page: int) -> list[dict[str, Any]]\n"
        "    List one page of the catalogue (about 2 KB of JSON)."
    )


async def test_invalid_arguments_raise_inside_the_script(
    closing: list[Agent[Any, Any]],
) -> None:
    # covers G-49
    source = (
        "try:\n    await tools.get_weather(city=3)\nexcept RuntimeError as e:\n    r = str(e)\nr"
    )
    model = ScriptedModel([Turn(tool_calls=[Call("code_execute", {"source": source})]), "ok"])
    agent = _code_agent(model, closing)

    await agent.run("weather?")

    assert _text(_tool_messages(model, 1)[0]) == (
        "invalid_input: Invalid arguments for tool 'get_weather':\n"
        "- `city`: Input should be a valid string (got 3)\n"
        "Fix the arguments and call the tool again."
    )


async def test_uncaught_tool_error_fails_the_script(closing: list[Agent[Any, Any]]) -> None:
    # covers G-49
    source = "await tools.get_weather(city='Oslo', unit='k')"
    model = ScriptedModel([Turn(tool_calls=[Call("code_execute", {"source": source})]), "ok"])
    agent = _code_agent(model, closing)

    await agent.run("weather?")

    [message] = _tool_messages(model, 1)
    assert message.is_error
    assert "RuntimeError: invalid_input: Invalid arguments for tool 'get_weather'" in (
        _text(message)
    )


async def test_in_script_calls_pass_the_gate(closing: list[Agent[Any, Any]]) -> None:
    # covers G-49
    def no_oslo(request: ToolCallRequest) -> Deny | None:
        if request.arguments.get("city") == "Oslo":
            return Deny("Oslo is off limits.")
        return None

    source = (
        "out = []\n"
        "for city in ['Paris', 'Oslo']:\n"
        "    try:\n"
        "        w = await tools.get_weather(city)\n"
        "        out.append(w['city'] + ':' + str(w['temp']))\n"
        "    except RuntimeError as e:\n"
        "        out.append(str(e))\n"
        "out"
    )
    model = ScriptedModel([Turn(tool_calls=[Call("code_execute", {"source": source})]), "ok"])
    agent = _code_agent(model, closing, tool_options=ToolOptions(before_call=[no_oslo]))

    await agent.run("weather?")

    assert json.loads(_text(_tool_messages(model, 1)[0])) == [
        "Paris:21",
        "approval_denied: Oslo is off limits.",
    ]


async def test_code_search_returns_exact_signatures(closing: list[Agent[Any, Any]]) -> None:
    # covers G-48
    model = ScriptedModel([Turn(tool_calls=[Call("code_search", {"query": "weather"})]), "ok"])
    agent = _code_agent(model, closing)

    await agent.run("find weather")

    assert _text(_tool_messages(model, 1)[0]) == (
        "await tools.get_weather(city: str, unit: Literal['c', 'f'] = 'c') -> dict[str, Any]\n"
        "    Current weather for a city."
    )


async def test_tool_call_limit_and_result_cap(closing: list[Agent[Any, Any]]) -> None:
    source = (
        "n = 0\n"
        "try:\n"
        "    for i in range(5):\n"
        "        await tools.list_items(page=i)\n"
        "        n += 1\n"
        "except RuntimeError as e:\n"
        "    err = str(e)\n"
        "[n, err, 'y' * 100]"
    )
    model = ScriptedModel([Turn(tool_calls=[Call("code_execute", {"source": source})]), "ok"])
    config = CodeModeConfig(max_tool_calls=3, max_result_chars=80)
    agent = _code_agent(model, closing, code_mode=config)

    await agent.run("go")

    assert _calls == [0, 1, 2]
    content = _text(_tool_messages(model, 1)[0])
    assert content.startswith('[3,"tool_call_limit: a script may make at most 3 tool calls.","yyy')
    assert content.endswith("\n[... 85 more characters cut; return a smaller value]")


async def test_prepare_step_tools_override_is_not_honoured(
    closing: list[Agent[Any, Any]],
) -> None:
    model = ScriptedModel(["hi"])
    agent = _code_agent(model, closing)

    await agent.run("hello")

    # G-52: the catalogue is the two code-mode tools, whatever the real tools are.
    assert [d.name for d in model.requests[0].tools] == ["code_execute", "code_search"]
    assert set(agent.config.tools.by_name) >= {
        "list_items",
        "get_weather",
        "code_execute",
        "code_search",
    }
