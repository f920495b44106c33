"""``bastion mcp list|tools|call`` against real servers (the demo server, mcp-server-time)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from bastion.cli import app

DEMO = str(Path(__file__).parents[1] / "mcp" / "demo_server.py")


@pytest.fixture
def config(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    path = tmp_path / "mcp.json"
    path.write_text(
        json.dumps(
            {
                "mcpServers": {
                    "demo": {"command": sys.executable, "args": [DEMO, "stdio"]},
                    "remote": {
                        "url": "http://127.0.0.1:9/mcp",
                        "headers": {"Authorization": "Bearer ${DEMO_TOKEN}"},
                    },
                    "off": {"command": "nothing", "disabled": True},
                }
            }
        )
    )
    monkeypatch.setenv("DEMO_TOKEN", "t0ken")
    monkeypatch.setenv("BASTION_MCP_CONFIG", str(path))
    return path


def cli(*args: str) -> Result:
    return CliRunner().invoke(app, ["mcp", *args])


def test_list_shows_the_enabled_servers_without_secrets(config: Path):
    result = cli("list")
    assert result.exit_code == 0, result.output
    words = result.output.split()
    assert words[3:5] == ["demo", "stdio"]
    assert DEMO in result.output
    assert words[-3:] == ["remote", "http", "http://127.0.0.1:9/mcp"]
    assert "off" not in result.output
    assert "t0ken" not in result.output


def test_tools_lists_names_classes_and_descriptions(config: Path):
    result = cli("tools", "demo")
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line for line in result.output.splitlines()[1:]}
    assert rows["add"].split()[1] == "external_stateful"
    assert "Add two integers." in rows["add"]
    listed = json.loads(cli("tools", "demo", "--json").output)
    assert next(t for t in listed if t["name"] == "add")["input_schema"]["required"] == ["a", "b"]


def test_call_prints_structured_content_and_exits_1_on_a_tool_error(config: Path):
    result = cli("call", "demo", "add", '{"a": 2, "b": 5}')
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"result": 7}
    failed = cli("call", "demo", "fail", '{"reason": "because"}')
    assert failed.exit_code == 1
    assert "refused: because" in failed.output


def test_an_ad_hoc_stdio_server_needs_no_config():
    result = cli(
        "call", "-", "add", '{"a": 1, "b": 1}', "--stdio", f"{sys.executable} {DEMO} stdio"
    )
    assert result.exit_code == 0, result.output
    assert json.loads(result.output) == {"result": 2}


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("call", "nope", "add"), "Unknown MCP server 'nope'. Configured: 'demo', 'remote'"),
        (("call", "demo", "add", "{not json"), "ARGUMENTS is not JSON"),
        (("call", "demo", "add", "[1]"), "ARGUMENTS must be a JSON object"),
        (("tools", "--url", "ftp://x"), "must start with http:// or https://"),
    ],
)
def test_usage_mistakes_exit_2_with_one_line(config: Path, args: tuple[str, ...], message: str):
    result = cli(*args)
    assert result.exit_code == 2
    assert message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_an_unreachable_server_exits_1_with_one_line(config: Path):
    result = cli("tools", "remote")
    assert result.exit_code == 1
    assert "MCP server 'remote' (http://127.0.0.1:9/mcp) did not start" in " ".join(
        result.output.split()
    )


def test_a_broken_config_is_a_usage_error(tmp_path: Path):
    broken = tmp_path / "bad.json"
    broken.write_text('{"mcpServers": {"x": {"args": []}}}')
    result = cli("list", "--config", str(broken))
    assert result.exit_code == 2
    assert "give 'command' (a stdio server) or 'url'" in " ".join(result.output.split())
