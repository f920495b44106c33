"""Graph executions over HTTP: start, follow, resume, history, fork; tenant-scoped."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import httpx
import pytest

from bastion.graph import Graph, NodeContext
from bastion.server import create_app

from ._agents import Sse, mailer, parse_sse
from .conftest import client, running


def review() -> Graph:
    graph = Graph("review")

    @graph.node
    def draft(inputs: list[Any]) -> str:
        return f"A post about {inputs[0]}"

    @graph.node
    async def approve(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.pause({"draft": inputs[0]}, reason="Publish this post?")

    @graph.node
    def publish(inputs: list[Any]) -> str:
        return f"published: {inputs[0]}"

    graph.add_edge("draft", "approve").add_edge("approve", "publish")
    return graph


def chain() -> Graph:
    graph = Graph("chain")
    graph.add_node("double", lambda inputs: inputs[0] * 2)
    graph.add_node("inc", lambda inputs: inputs[0] + 1)
    graph.add_edge("double", "inc")
    return graph


async def _events(http: httpx.AsyncClient, execution: str, **headers: str) -> list[Sse]:
    async with http.stream("GET", f"/executions/{execution}/events", headers=headers) as body:
        assert body.status_code == 200
        return [event async for event in parse_sse(body.aiter_lines())]


async def _settled(http: httpx.AsyncClient, execution: str) -> dict[str, Any]:
    await _events(http, execution)  # the stream ends when the execution does
    view: dict[str, Any] = (await http.get(f"/executions/{execution}")).json()
    return view


def _node_signals(events: list[Sse]) -> list[str]:
    return [f"{e.event} {e.data['node_key']}" for e in events if e.event.startswith("node.")]


async def test_an_execution_runs_and_its_signals_stream_and_resume_from_an_id(store_url: str):
    app = create_app({}, graphs={"chain": chain()}, store=store_url)
    async with running(app), client(app) as http:
        started = await http.post("/graphs/chain/executions", json={"input": 20})
        assert started.status_code == 202
        execution = started.json()["execution_id"]
        assert started.json()["events"] == f"/executions/{execution}/events"
        events = await _events(http, execution)
        assert [e.event for e in events] == [
            "graph.before", "node.before", "node.after", "node.before", "node.after",
            "graph.after",
        ]  # fmt: skip
        assert [e.id for e in events] == list(range(1, 7))
        assert events[-1].data["status"] == "completed"
        assert events[-1].data["output"] == 41
        again = await _events(http, execution, **{"Last-Event-ID": "4"})
        assert [(e.id, e.event) for e in again] == [(5, "node.after"), (6, "graph.after")]
        view = (await http.get(f"/executions/{execution}")).json()
        assert (view["status"], view["output"], view["graph"]) == ("completed", 41, "chain")
        assert view["finished"] == {"double@0": 40, "inc@0": 41}
        listed = (await http.get("/graphs/chain/executions")).json()
        assert [(e["execution_id"], e["status"]) for e in listed] == [(execution, "completed")]
        graphs = (await http.get("/graphs")).json()
        assert graphs[0]["key"] == "chain"
        assert graphs[0]["mermaid"].startswith("flowchart TD")


async def test_a_suspended_execution_resumes_with_a_decision(store_url: str):
    app = create_app({}, graphs=review(), store=store_url)
    async with running(app), client(app) as http:
        execution = (await http.post("/graphs/review/executions", json={"input": "graphs"})).json()[
            "execution_id"
        ]
        view = await _settled(http, execution)
        assert view["status"] == "awaiting_approval"
        [pending] = view["pending"]
        assert (pending["node"], pending["reason"]) == ("approve", "Publish this post?")
        decision = {
            "interrupt_id": pending["id"],
            "decision": {"decision": "result", "value": "ok"},
        }
        resumed = await http.post(
            f"/executions/{execution}/resume", json={"interrupts": [decision]}
        )
        assert resumed.status_code == 202, resumed.text
        view = await _settled(http, execution)
        assert (view["status"], view["output"]) == ("completed", "published: ok")
        events = await _events(http, execution)
        assert _node_signals(events)[-2:] == ["node.before publish", "node.after publish"]
        assert [e.id for e in events] == list(range(1, len(events) + 1))  # numbering goes on
        twice = await http.post(f"/executions/{execution}/resume", json={"interrupts": [decision]})
        assert twice.status_code == 409, twice.text  # the decision was used once


async def test_history_and_a_fork_with_an_edit(sqlite_url: str):
    app = create_app({}, graphs={"chain": chain()}, store=sqlite_url)
    async with running(app), client(app) as http:
        execution = (await http.post("/graphs/chain/executions", json={"input": 1})).json()[
            "execution_id"
        ]
        await _settled(http, execution)
        history = (await http.get(f"/executions/{execution}/history")).json()
        first = next(c for c in history if c["nodes"] == ["double"])
        assert first["kind"] == "node"
        forked = await http.post(
            f"/executions/{execution}/fork",
            json={"version": first["version"], "edits": {"double": 100}},
        )
        assert forked.status_code == 202, forked.text
        fork_id = forked.json()["execution_id"]
        view = await _settled(http, fork_id)
        assert (view["status"], view["output"], view["forked_from"]) == (
            "completed", 101, [execution, first["version"]],
        )  # fmt: skip
        original = (await http.get(f"/executions/{execution}")).json()
        assert original["output"] == 3


async def test_executions_are_tenant_scoped(sqlite_url: str):
    app = create_app(
        {}, graphs={"chain": chain()}, store=sqlite_url, auth={"ta": "acme", "tb": "globex"}
    )
    async with running(app), client(app, "ta") as acme, client(app, "tb") as globex:
        execution = (await acme.post("/graphs/chain/executions", json={"input": 1})).json()[
            "execution_id"
        ]
        view = await _settled(acme, execution)
        assert view["tenant_id"] == "acme"
        for path in ("", "/events", "/history"):
            assert (await globex.get(f"/executions/{execution}{path}")).status_code == 404
        fork = await globex.post(f"/executions/{execution}/fork", json={})
        assert fork.status_code == 404
        assert (await globex.get("/graphs/chain/executions")).json() == []
        assert len((await acme.get("/graphs/chain/executions")).json()) == 1


async def test_bad_requests_are_clear_errors(sqlite_url: str):
    app = create_app({"mailer": mailer()}, graphs={"chain": chain()}, store=sqlite_url)
    async with running(app), client(app) as http:
        unknown = await http.post("/graphs/nope/executions", json={"input": 1})
        assert unknown.status_code == 404
        assert "No graph 'nope' is served (served: chain)" in unknown.json()["error"]["message"]
        assert (await http.get("/executions/gx_missing")).status_code == 404
        schema = (await http.get("/openapi.json")).json()
        assert "/graphs/{graph}/executions" in schema["paths"]
        assert "/executions/{execution_id}/fork" in schema["paths"]


def test_a_graph_keyed_by_another_name_is_a_user_error():
    from bastion.core import UserError

    with pytest.raises(UserError, match="key each graph by its key"):
        create_app({}, graphs={"other": chain()}, store="memory://")


async def test_concurrent_executions_each_get_their_own_stream(sqlite_url: str):
    app = create_app({}, graphs={"chain": chain()}, store=sqlite_url)
    async with running(app), client(app) as http:
        started = await asyncio.gather(
            *(http.post("/graphs/chain/executions", json={"input": i}) for i in range(5))
        )
        ids = [s.json()["execution_id"] for s in started]
        views = await asyncio.gather(*(_settled(http, i) for i in ids))
    assert [v["output"] for v in views] == [2 * i + 1 for i in range(5)]


def test_the_docs_example_prints_what_the_page_says(tmp_path: Path):
    page = (Path(__file__).parents[2] / "docs" / "server.md").read_text(encoding="utf-8")
    section = page.split("\n## Graphs\n", 1)[1].split("\n## ", 1)[0]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]
    printed = section.split("prints\n\n```\n", 1)[1].split("```", 1)[0]
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
    assert done.stdout == printed
