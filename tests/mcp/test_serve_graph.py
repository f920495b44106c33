"""A graph served over MCP: in process, over stdio (``bastion mcp serve``) and streamable HTTP."""

from __future__ import annotations

import asyncio
import re
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from bastion.core import UserError
from bastion.governance import ResultDecision
from bastion.graph import Graph, StoreCheckpointer
from bastion.mcp import MCPServer, agent_server
from bastion.tools import Directive, InterruptResolution

from .served_graphs import outline, review

GRAPHS = str(Path(__file__).with_name("served_graphs.py"))


def _text(result: Any) -> str:
    return "\n".join(str(getattr(block, "text", "")) for block in result.content)


async def _call(client: MCPServer, tool: str, input: Any) -> tuple[Any, list[str]]:
    seen: list[str] = []

    async def progress(progress: float, total: float | None, message: str | None) -> None:
        seen.append(f"{progress:g} {message}")

    result = await client.call_tool(tool, {"input": input}, progress=progress)
    return result, seen


async def _resume_with(store: str, text: str) -> Any:
    """Resume the execution a suspension message names, answering its pause."""
    match = re.search(r"execution (\S+) waits", text)
    assert match is not None, text
    [pending] = re.findall(r"^- (\S+) \(node approve\): Publish this post\?$", text, re.M)
    answer = InterruptResolution(interrupt_id=pending, decision=ResultDecision(value="ship it"))
    checkpointer = StoreCheckpointer(store)
    try:
        return await review.resume(
            match[1], Directive(interrupts=[answer]), checkpointer=checkpointer
        )
    finally:
        await checkpointer.aclose()


async def test_the_input_schema_comes_from_the_entry_and_nodes_are_progress():
    client = MCPServer.in_process(agent_server(outline), name="served")
    async with client:
        (listed,) = await client.describe_tools()
        result, seen = await _call(client, "outline", {"subject": "graphs", "points": 2})
    assert listed.name == "outline"
    topic = listed.input_schema["$defs"]["Topic"]
    assert topic["required"] == ["subject", "points"]
    assert topic["properties"]["points"]["type"] == "integer"
    assert not result.is_error
    assert result.structured_content == {"result": "graphs 1; graphs 2"}
    assert seen == ["1 plan started", "2 plan finished", "3 write started", "4 write finished"]


async def test_input_that_does_not_fit_the_entry_is_an_error_and_runs_nothing():
    client = MCPServer.in_process(agent_server(outline), name="served")
    async with client:
        result, seen = await _call(client, "outline", {"subject": "graphs"})
    assert result.is_error
    assert "input.points\n  Field required" in _text(result)
    assert seen == []


async def test_a_failed_node_is_an_error_result_naming_it():
    graph = Graph("fragile")

    @graph.node
    def crash(inputs: list[Any]) -> str:
        raise ValueError(f"cannot handle {inputs[0]!r}")

    client = MCPServer.in_process(agent_server(graph, tool_name="fragile_graph"))
    async with client:
        result, seen = await _call(client, "fragile_graph", "x")
    assert result.is_error
    assert re.search(
        r"Graph 'fragile' execution \S+ failed: crash: cannot handle 'x'", _text(result)
    )
    assert seen == ["1 crash started", "2 crash failed: ValueError: cannot handle 'x'"]


async def test_a_suspended_graph_names_its_execution_and_how_to_resume(tmp_path: Path):
    store = f"sqlite:///{tmp_path}/graphs.db"
    client = MCPServer.in_process(review.mcp_server(store=store, source="app.py:review"))
    async with client:
        result, seen = await _call(client, "review", "graphs")
    text = _text(result)
    assert result.is_error
    assert seen == [
        "1 draft started",
        "2 draft finished",
        "3 approve started",
        "4 approve waits for a decision",
    ]
    execution = re.search(r"execution (\S+) waits", text)
    assert execution is not None
    [pending] = re.findall(r"^- (\S+) \(node approve\)", text, re.M)
    assert (
        f"bastion graph resume {execution[1]} --graph app.py:review --store {store} "
        f"--approve {pending}"
    ) in text
    resumed = await _resume_with(store, text)
    assert (resumed.status, resumed.output) == ("completed", "published: ship it")


async def test_a_graph_without_a_store_says_it_cannot_be_resumed():
    client = MCPServer.in_process(agent_server(review))
    async with client:
        result, _ = await _call(client, "review", "graphs")
    assert result.is_error
    assert "(approve); it has no StoreCheckpointer, so it cannot be resumed." in _text(result)


def test_an_invalid_tool_name_or_store_is_a_user_error():
    with pytest.raises(UserError, match="Invalid MCP tool name 'a b'"):
        agent_server(outline, tool_name="a b")
    with pytest.raises(UserError):
        outline.mcp_server(store="nosuch://x")


async def test_bastion_mcp_serve_serves_a_graph_over_stdio(tmp_path: Path):
    store = f"sqlite:///{tmp_path}/graphs.db"
    args = ["-m", "bastion.cli", "mcp", "serve", f"{GRAPHS}:review", "--store", store]
    server = MCPServer.stdio(sys.executable, args, name="cli")
    async with server:
        result, seen = await _call(server, "review", "graphs")
    assert result.is_error
    assert seen[-1] == "4 approve waits for a decision"
    text = _text(result)
    assert f"--graph {GRAPHS}:review --store {store} --approve" in text
    resumed = await _resume_with(store, text)  # in this process, from the same store
    assert (resumed.status, resumed.output) == ("completed", "published: ship it")


@pytest.fixture
async def http_graph(tmp_path: Path) -> AsyncIterator[str]:
    store = f"sqlite:///{tmp_path}/graphs.db"
    process = await asyncio.create_subprocess_exec(
        sys.executable, GRAPHS, "outline", store, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert process.stdout is not None
        line = await asyncio.wait_for(process.stdout.readline(), 30)
        assert line.startswith(b"port "), line
        yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    finally:
        process.kill()
        await process.wait()


async def test_a_graph_over_streamable_http_streams_its_nodes(http_graph: str):
    server = MCPServer.http(http_graph, name="graphs")
    async with server:
        calls = [_call(server, "outline", {"subject": f"s{i}", "points": i}) for i in range(1, 4)]
        answers = await asyncio.gather(*calls)
    for i, (result, seen) in enumerate(answers, start=1):
        assert result.structured_content == {
            "result": "; ".join(f"s{i} {n}" for n in range(1, i + 1))
        }
        assert seen == ["1 plan started", "2 plan finished", "3 write started", "4 write finished"]


def test_the_docs_example_runs_as_printed(tmp_path: Path):
    page = (Path(__file__).parents[2] / "docs" / "mcp.md").read_text(encoding="utf-8")
    section = page.split("### Serving a graph", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["{'result': 'graphs 1; graphs 2'}"]
