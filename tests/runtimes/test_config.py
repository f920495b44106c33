"""``SandboxConfig`` validation and how tool and agent settings resolve."""

from __future__ import annotations

from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import ToolOptions
from bastion.core import FsAccess, SandboxConfig, UserError, resolve_sandbox
from bastion.testing import ScriptedModel


def test_defaults_are_the_documented_ones() -> None:
    config = SandboxConfig()
    assert config.enabled
    assert config.timeout == 30.0
    assert config.max_memory_mb == 256
    assert not config.allow_network
    assert config.allow_fs is None
    assert config.env == {}
    assert config.cpu_limit == 30
    assert config.max_output_bytes == 1_048_576


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"timeout": 0}, "timeout must be a number > 0, got 0"),
        ({"timeout": float("nan")}, "timeout must be a number > 0"),
        ({"timeout": True}, "timeout must be a number > 0, got True"),
        ({"max_memory_mb": 8}, "max_memory_mb must be a number >= 16, got 8"),
        ({"max_processes": 0}, "max_processes must be a number >= 1"),
        ({"cpu_seconds": -1}, "cpu_seconds must be a number > 0"),
        ({"max_file_size_mb": "big"}, "max_file_size_mb must be a number >= 1, got 'big'"),
        ({"env": {"A=B": "x"}}, "invalid variable name 'A=B'"),
        ({"env": {"A": 1}}, "env['A'] must be a string, got 1"),
        ({"allow_fs": ["/data"]}, "allow_fs must be an FsAccess or None"),
    ],
)
def test_invalid_config_is_a_user_error(
    kwargs: dict[str, Any], message: str
) -> None:
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        SandboxConfig(**kwargs)


def test_fs_access_takes_absolute_paths_only() -> None:
    assert FsAccess(read_only=["/data"]).read_only == ("/data",)  # type: ignore[arg-type]
    with pytest.raises(UserError, match="absolute paths, got 'data'"):
        FsAccess(read_only=("data",))
    with pytest.raises(UserError, match="a sequence of paths, got '/data'"):
        FsAccess(read_write="/data")  # type: ignore[arg-type]


AGENT = SandboxConfig(timeout=5)
TOOL = SandboxConfig(timeout=9)
OFF = SandboxConfig(enabled=False, timeout=7)


@pytest.mark.parametrize(
    ("tool_setting", "agent_setting", "expected"),
    [
        (None, None, None),
        (None, AGENT, AGENT),  # the agent's config applies to tools without their own
        (TOOL, AGENT, TOOL),  # tool level wins
        (False, AGENT, None),  # sandbox=False on the tool overrides the agent
        (False, True, None),
        (OFF, AGENT, None),  # enabled=False disables
        (None, OFF, None),
        (True, AGENT, AGENT),  # True: sandboxed with the agent's limits
        (True, OFF, SandboxConfig(timeout=7)),  # the tool turns the agent's settings on
        (True, None, SandboxConfig()),
        (None, True, SandboxConfig()),
        (TOOL, False, TOOL),
    ],
)
def test_tool_setting_wins_over_the_agent(  # covers A-32, T-09
    tool_setting: bool | SandboxConfig | None,
    agent_setting: bool | SandboxConfig | None,
    expected: SandboxConfig | None,
) -> None:
    assert resolve_sandbox(tool_setting, agent_setting) == expected


def test_invalid_sandbox_settings_fail_at_construction() -> None:
    def noop() -> str:
        """Do nothing."""
        return ""

    with pytest.raises(
        UserError,
        match=r"Tool 'noop': sandbox must be True, False, None or a SandboxConfig, got 'yes'",
    ):
        tool(noop, side_effect_class="pure", sandbox="yes")  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"Agent 'a': sandbox must be .* got 1"):
        Agent("a", model=ScriptedModel(["x"]), tool_options=ToolOptions(sandbox=1))  # type: ignore[arg-type]
    with pytest.raises(UserError, match=r"Agent 'a': runtime must implement bastion.core.Runtime"):
        Agent("a", model=ScriptedModel(["x"]), runtime="/tmp")  # type: ignore[arg-type]
