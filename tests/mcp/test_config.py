"""The mcpServers JSON and the per-server options: checked before anything starts."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bastion.core import UserError
from bastion.mcp import MCPServer, load_config, servers_from_config


def test_the_common_format_loads_stdio_http_and_sse_servers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setenv("GIT_REPO", "/srv/repo")
    monkeypatch.setenv("API_TOKEN", "s3cret")
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "git": {
                        "command": "uvx",
                        "args": ["mcp-server-git", "--repository", "${GIT_REPO}"],
                        "env": {"LOG": "${LOG_LEVEL:-warn}"},
                        "autoApprove": ["git_status"],  # another client's key: ignored
                    },
                    "api": {
                        "url": "https://api.example.com/mcp",
                        "headers": {"Authorization": "Bearer ${API_TOKEN}"},
                        "timeout": 5,
                    },
                    "legacy": {"type": "sse", "url": "http://127.0.0.1:8000/sse"},
                    "tuned": {
                        "command": "srv",
                        "bastion": {
                            "side_effects": {"get_*": "read_only"},
                            "idempotent": ["get_*"],
                        },
                    },
                    "off": {"command": "nothing", "disabled": True},
                }
            }
        )
    )
    servers = load_config(path, timeout=30)
    assert list(servers) == ["git", "api", "legacy", "tuned"]
    git = servers["git"]
    assert git.transport.kind == "stdio"
    assert git.transport.args == ("mcp-server-git", "--repository", "/srv/repo")
    assert git.transport.env == {"LOG": "warn"}
    assert git.options.timeout == 30  # load_config's default for every server
    api = servers["api"]
    assert (api.transport.kind, api.transport.headers) == (
        "http",
        {"Authorization": "Bearer s3cret"},
    )
    assert api.options.timeout == 5  # the entry's own timeout wins
    assert servers["legacy"].transport.kind == "sse"
    tuned = servers["tuned"].options
    assert tuned.side_effect_of("get_weather") == "read_only"
    assert tuned.side_effect_of("delete") == "external_stateful"
    assert tuned.is_idempotent("get_weather")
    assert "s3cret" not in repr(api)  # headers stay out of reprs and listings


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ([], "expected a JSON object with 'mcpServers'"),
        ({"mcpServers": []}, "'mcpServers' must be an object"),
        ({"mcpServers": {"x": 1}}, "server 'x' must be an object"),
        ({"mcpServers": {"x": {}}}, "give 'command' (a stdio server) or 'url'"),
        ({"mcpServers": {"x": {"command": "a", "args": "b"}}}, "'args' must be a list"),
        ({"mcpServers": {"x": {"url": "ftp://h"}}}, "must start with http:// or https://"),
        ({"mcpServers": {"x": {"url": "http://h", "type": "ws"}}}, "unknown type 'ws'"),
        ({"mcpServers": {"x": {"command": "${NOPE_NOT_SET}"}}}, "uses ${NOPE_NOT_SET}"),
        ({"mcpServers": {"x y": {"command": "a"}}}, "Invalid MCP server name 'x y'"),
        ({"mcpServers": {"x": {"command": "a", "bastion": {"retries": 2}}}}, "unknown option"),
    ],
)
def test_invalid_entries_are_user_errors_naming_the_problem(data: Any, message: str):
    with pytest.raises(UserError) as info:
        servers_from_config(data)
    assert message in str(info.value)


def test_missing_and_malformed_files_are_user_errors(tmp_path: Path):
    with pytest.raises(UserError, match="Cannot read MCP config"):
        load_config(tmp_path / "absent.json")
    bad = tmp_path / "bad.json"
    bad.write_text("{")
    with pytest.raises(UserError, match="is not valid JSON"):
        load_config(bad)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": 0}, "timeout must be a number of seconds > 0"),
        ({"connect_timeout": float("inf")}, "connect_timeout must be a number of seconds > 0"),
        ({"side_effects": {"x": "dangerous"}}, "side_effects['x'] must be one of"),
        ({"idempotent": "x"}, "idempotent must be a list of tool names"),
        ({"needs_approval": [1]}, "needs_approval must hold non-empty strings"),
        ({"inbound_sanitization": "none"}, "unknown inbound_sanitization 'none'"),
        ({"defer_loading": "auto"}, "defer_loading must be True, False or None"),
        ({"timout": 3}, "unknown option 'timout'"),
    ],
)
def test_invalid_options_are_user_errors(options: dict[str, Any], message: str):
    with pytest.raises(UserError, match=message.replace("[", r"\[").replace("]", r"\]")):
        MCPServer.stdio("srv", **options)


def test_names_are_derived_from_the_command_line_or_url():
    assert MCPServer.stdio("uvx", ["mcp-server-git", "--repository", "."]).name == "mcp-server-git"
    assert (
        MCPServer.stdio("npx", ["-y", "@modelcontextprotocol/server-memory"]).name
        == "server-memory"
    )
    assert MCPServer.stdio("python", ["./tools/weather.py"]).name == "weather"
    assert MCPServer.stdio("/usr/bin/mcp-server-time").name == "mcp-server-time"
    assert MCPServer.http("https://mcp.example.com/mcp").name == "mcp_example_com"


@given(
    st.dictionaries(
        st.text(max_size=8),
        st.one_of(
            st.none(),
            st.booleans(),
            st.text(max_size=12),
            st.lists(st.text(max_size=6), max_size=3),
            st.dictionaries(st.text(max_size=6), st.text(max_size=6), max_size=3),
        ),
        max_size=6,
    )
)
def test_any_entry_either_loads_or_is_a_user_error(entry: dict[str, Any]):
    try:
        servers = servers_from_config({"mcpServers": {"fuzz": entry}})
    except UserError:
        return
    assert set(servers) <= {"fuzz"}
