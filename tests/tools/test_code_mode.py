"""Code mode's configuration, signatures and failure to start without the extra."""

from __future__ import annotations

import sys
from typing import Any

import pytest
from pydantic import BaseModel

from bastion import Agent, ToolOptions, tool
from bastion.core import UserError
from bastion.testing import ScriptedModel
from bastion.tools import CodeMode, CodeModeConfig, Tool, call_signature


@tool(side_effect_class="pure")
def add(a: int, b: int = 2) -> int:
    """Add two integers.

    More text the signature leaves out.
    """
    return a + b


class Filter(BaseModel):
    tags: list[str]


@tool(side_effect_class="read_only")
def find(query: str | None, filters: Filter, limit: float = 1.5, flags: bool = False) -> None:
    """Find things."""


def test_signatures_render_python_types() -> None:
    # covers G-48
    assert call_signature(add) == (
        "await tools.add(a: int, b: int = 2) -> int\n    Add two integers."
    )
    assert call_signature(find) == (
        "await tools.find(query: str | None, filters: Filter (dict), limit: float = 1.5, "
        "flags: bool = False) -> None\n    Find things."
    )


def _echo(args: dict[str, Any]) -> dict[str, Any]:
    return args


def test_raw_schema_tool_signature() -> None:
    # covers G-48
    raw = tool(
        _echo,
        name="raw",
        description="",
        parameters={
            "type": "object",
            "properties": {"ids": {"type": "array", "items": {"type": "integer"}}, "x": {}},
            "required": ["ids"],
        },
        side_effect_class="pure",
    )
    assert call_signature(raw) == (
        "await tools.raw(ids: list[int], x: Any = None) -> dict[str, Any]"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": 0}, "CodeModeConfig.timeout must be > 0, got 0."),
        ({"max_memory": 0}, "CodeModeConfig.max_memory must be an integer >= 1, got 0."),
        ({"max_tool_calls": -1}, "CodeModeConfig.max_tool_calls must be an integer >= 1"),
    ],
)
def test_config_is_validated(kwargs: dict[str, Any], message: str) -> None:
    with pytest.raises(UserError, match=message.replace(".", r"\.")):
        CodeModeConfig(**kwargs)


def test_agent_validates_tool_invocation() -> None:
    # covers G-46
    model = ScriptedModel(["x"])
    with pytest.raises(UserError, match=r"tool_options\.invocation must be 'direct' or"):
        Agent("a", model=model, tool_options=ToolOptions(invocation="codemode"))  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"tool_options\.code_mode needs invocation='code-mode'"):
        Agent("a", model=model, tool_options=ToolOptions(code_mode=CodeModeConfig()))


def test_reserved_names_are_refused() -> None:
    clash = tool(lambda: 1, name="code_search", side_effect_class="pure")
    with pytest.raises(UserError, match="A tool is named 'code_search', which code mode reserves"):
        Agent(
            "a",
            model=ScriptedModel(["x"]),
            tools=[clash],
            tool_options=ToolOptions(invocation="code-mode"),
        )


def test_direct_mode_has_no_code_tools() -> None:
    # covers G-46
    agent = Agent("a", model=ScriptedModel(["x"]), tools=[add])
    assert agent.config.code_mode is None
    assert [d.name for d in agent.config.tools.advertised] == ["add"]


def test_code_execute_description_lists_the_api() -> None:
    # covers G-48
    mode = CodeMode({"add": add, "find": find})
    execute, search = mode.tools
    assert execute.description.endswith(
        "Limits: 5 s of computation, 64 MB memory, 100 tool calls. Tools: add, find."
    )
    assert execute.side_effect_class == "read_only"  # every API tool is pure or read-only
    assert search.side_effect_class == "pure"
    assert mode.search("") == f"{call_signature(add)}\n{call_signature(find)}"
    assert mode.search("zebra") == "No tool matches 'zebra'. Tools: add, find."


async def test_missing_extra_names_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "pydantic_monty", None)
    mode = CodeMode({"add": add})
    with pytest.raises(UserError, match=r"pip install 'bastion\[code\]'"):
        await mode.sandbox.run("1", {})


def _names(tools: tuple[Tool, Tool]) -> list[str]:
    return [t.name for t in tools]


def test_tools_are_named() -> None:
    # covers G-46
    assert _names(CodeMode({}).tools) == ["code_execute", "code_search"]
