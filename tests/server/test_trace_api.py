"""``GET /runs/{id}/trace`` and ``GET /executions/{id}/trace``: span trees from logged events."""

from __future__ import annotations

import json
import runpy
import subprocess
import sys
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from bastion import Agent, tool
from bastion.core import ModelRequest, ToolMessage
from bastion.graph import Graph
from bastion.server import create_app
from bastion.server._events import LoggedEvent
from bastion.server._trace import build_trace
from bastion.testing import Call, FunctionModel, Turn

from ._console import TOKEN, support
from .conftest import client, running

DOCS = Path(__file__).parents[2] / "docs"


def _shape(span: dict[str, Any], depth: int = 0) -> list[tuple[int, str, str, str]]:
    rows = [(depth, span["kind"], span["name"], span["status"])]
    for child in span["children"]:
        rows += _shape(child, depth + 1)
    return rows


async def _settle(http: Any, path: str) -> None:
    async with http.stream("GET", f"{path}/events") as body:
        async for _ in body.aiter_lines():
            pass


async def test_a_runs_trace_nests_steps_calls_and_sub_agent_runs(sqlite_url: str) -> None:
    # covers G-07
    app = create_app(support(), store=sqlite_url, auth={TOKEN: "acme", "other": "globex"})
    async with running(app), client(app, TOKEN) as http, client(app, "other") as stranger:
        run_id = (await http.post("/runs", json={"input": "Refund A1"})).json()["run_id"]
        await _settle(http, f"/runs/{run_id}")
        found = await http.get(f"/runs/{run_id}/trace")
        assert found.status_code == 200
        trace = found.json()
        assert (trace["id"], trace["kind"], trace["live"]) == (run_id, "run", False)
        [root] = trace["spans"]
        assert _shape(root) == [
            (0, "run", "support", "awaiting_approval"),
            (1, "step", "step 1", "ok"), (2, "model", "test:support-model", "ok"),
            (2, "tool", "look_up_order", "ok"), (2, "tool", "researcher", "ok"),
            (3, "run", "researcher", "completed"),
            (4, "step", "step 1", "ok"), (5, "model", "test:policy-model", "ok"),
            (5, "tool", "read_policy", "ok"),
            (4, "step", "step 2", "ok"), (5, "model", "test:policy-model", "ok"),
            (1, "step", "step 2", "ok"), (2, "model", "test:support-model", "ok"),
            (2, "tool", "refund", "awaiting_approval"),
        ]  # fmt: skip
        step_1 = root["children"][0]
        look_up = step_1["children"][1]
        assert look_up["attributes"]["arguments"] == '{"order": "A1"}'
        assert look_up["attributes"]["result"] == "Order A1: 30 EUR, paid"
        assert root["tokens"]["prompt"] == sum(s["tokens"]["prompt"] for s in _all(root, "step"))
        assert step_1["children"][0]["tokens"] == step_1["tokens"]
        for span in _all(root, None):  # each bar lies inside its parent's
            for child in span["children"]:
                assert span["start"] <= child["start"]
                assert child["end"] is None or span["end"] is None or child["end"] <= span["end"]
        # The run's bar starts the trace; it ends by its own measure, at most when the last
        # batch was written (a batch reaches the store a little after its events).
        assert root["start"] == 0
        assert 0 < root["end"] <= trace["duration"]
        assert (await stranger.get(f"/runs/{run_id}/trace")).status_code == 404
        assert (await http.get("/runs/run_nope/trace")).status_code == 404
        schema = (await http.get("/openapi.json")).json()
        answer = schema["paths"]["/runs/{run_id}/trace"]["get"]["responses"]["200"]
        assert answer["content"]["application/json"]["schema"]["$ref"].endswith("/Trace")
        assert "children" in schema["components"]["schemas"]["TraceSpan"]["properties"]


def _all(span: dict[str, Any], kind: str | None) -> list[dict[str, Any]]:
    found = [span] if kind is None or span["kind"] == kind else []
    for child in span["children"]:
        found += _all(child, kind)
    return found


def _writer() -> Agent[None, str]:
    @tool(side_effect_class="read_only")
    def count(text: str) -> int:
        """Count words.

        Args:
            text: The text.
        """
        return len(text.split())

    def turn(request: ModelRequest) -> Turn:
        if any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(text="Counted.")
        return Turn(tool_calls=[Call("count", {"text": "one two three"})])

    return Agent("writer", model=FunctionModel(turn, name="writer-model"), tools=[count])


async def test_an_executions_trace_nests_nodes_and_their_agent_runs(sqlite_url: str) -> None:
    graph = Graph("pipeline")
    graph.add_node("plan", lambda inputs: f"plan {inputs[0]}")
    graph.add_node("write", _writer())
    graph.add_edge("plan", "write")
    app = create_app({}, graphs=graph, store=sqlite_url)
    async with running(app), client(app) as http:
        started = await http.post("/graphs/pipeline/executions", json={"input": "x"})
        execution = started.json()["execution_id"]
        await _settle(http, f"/executions/{execution}")
        trace = (await http.get(f"/executions/{execution}/trace")).json()
        assert (trace["kind"], trace["live"]) == ("execution", False)
        [root] = trace["spans"]
        assert _shape(root) == [
            (0, "graph", "pipeline", "completed"),
            (1, "node", "plan", "ok"), (1, "node", "write", "ok"),
            (2, "run", "writer", "completed"),
            (3, "step", "step 1", "ok"), (4, "model", "test:writer-model", "ok"),
            (4, "tool", "count", "ok"),
            (3, "step", "step 2", "ok"), (4, "model", "test:writer-model", "ok"),
        ]  # fmt: skip
        assert root["children"][0]["attributes"]["output"] == "plan x"
        assert (await http.get("/executions/gx_nope/trace")).status_code == 404


def test_a_tool_logged_late_keeps_its_own_duration() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def at(seconds: float, seq: int, **data: Any) -> tuple[datetime, LoggedEvent]:
        data = {"seq": seq, "run_id": "r", **data}
        text = json.dumps(data)
        return t0 + timedelta(seconds=seconds), LoggedEvent(seq=seq, type=data["type"], data=text)

    events = [
        at(0.0, 1, type="agent.start", agent_name="a", model="m"),
        at(0.0, 2, type="step.start", step=1, model="m"),
        at(1.0, 3, type="tool.execute.start", tool_call_id="c1", tool_name="slow"),
        at(1.0, 4, type="tool.execute.start", tool_call_id="c2", tool_name="fast"),
        at(3.0, 5, type="tool.execute.end", tool_call_id="c1", tool_name="slow", duration=2.0),
        # ends come in call order: the fast one's is logged with the slow one's
        at(3.0, 6, type="tool.execute.end", tool_call_id="c2", tool_name="fast", duration=0.5),
        at(3.0, 7, type="tool.execute.error", tool_call_id="c3", tool_name="bad",
           kind="timeout", message="too slow", duration=0.25),
    ]  # fmt: skip
    trace = build_trace("r", "run", events, live=True)
    step = trace.spans[0].children[0]
    slow, fast, bad = step.children[1:]
    assert (slow.start, slow.end, fast.start, fast.end) == (1.0, 3.0, 1.0, 1.5)
    # a failure with no start logged: its bar is as long as the failed call took
    assert (bad.start, bad.end, bad.status, bad.error) == (2.75, 3.0, "error", "timeout: too slow")
    assert (trace.spans[0].end, trace.live) == (None, True)


def test_a_sub_agent_logged_after_its_parent_measured_its_end_stays_inside_its_bar() -> None:
    t0 = datetime(2026, 1, 1, tzinfo=UTC)

    def at(seconds: float, seq: int, **data: Any) -> tuple[datetime, LoggedEvent]:
        data = {"seq": seq, "run_id": "r", **data}
        text = json.dumps(data)
        return t0 + timedelta(seconds=seconds), LoggedEvent(seq=seq, type=data["type"], data=text)

    inner = {"type": "agent.start", "run_id": "c", "agent_name": "child", "model": "m"}
    done = {"type": "agent.end", "run_id": "c", "status": "completed", "duration": 0.001}
    events = [
        at(0.0, 1, type="agent.start", agent_name="a", model="m"),
        at(0.0, 2, type="step.start", step=1, model="m"),
        # the child's events reach the store after the parent measured its own end
        at(0.02, 3, type="subagent.event", tool_call_id="t", agent_name="child", event=inner),
        at(0.03, 4, type="subagent.event", tool_call_id="t", agent_name="child", event=done),
        at(0.03, 5, type="tool.execute.end", tool_call_id="t", tool_name="child", duration=0.005),
        at(0.03, 6, type="step.end", step=1),
        at(0.03, 7, type="agent.end", status="completed", duration=0.01),
    ]  # fmt: skip
    [root] = build_trace("r", "run", events, live=False).spans

    def inside(span: Any) -> None:
        for child in span.children:
            assert span.start <= child.start <= child.end <= span.end
            inside(child)

    assert root.end == 0.01
    inside(root)


def test_the_traces_example_of_server_md_prints_what_the_page_says(tmp_path: Path) -> None:
    text = (DOCS / "server.md").read_text(encoding="utf-8").split("## Traces", 1)[1]
    script = tmp_path / "trace_example.py"
    script.write_text(text.split("```python\n", 1)[1].split("```", 1)[0], encoding="utf-8")
    printed = text.split("prints\n", 1)[1].split("```\n", 1)[1].split("```", 1)[0]
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True, text=True, timeout=60, check=False, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed


async def test_a_map_nodes_element_executions_nest_under_it(sqlite_url: str) -> None:
    example = runpy.run_path(str(DOCS.parent / "examples" / "graph_review.py"))
    app = create_app({}, graphs=example["graph"], store=sqlite_url)
    async with running(app), client(app) as http:
        started = await http.post("/graphs/review/executions", json={"input": "graphs"})
        execution = started.json()["execution_id"]
        await _settle(http, f"/executions/{execution}")
        [root] = (await http.get(f"/executions/{execution}/trace")).json()["spans"]
    rows = [row for row in _shape(root) if row[1] in ("graph", "node", "run", "tool")]
    assert rows == [
        (0, "graph", "review", "suspended"),
        (1, "node", "outline", "ok"), (1, "node", "sections", "ok"),
        *[(2, "graph", "section", "completed"), (3, "node", "write", "ok"),
          (4, "run", "writer", "completed")] * 3,
        (1, "node", "draft", "ok"), (1, "node", "editor", "suspended"),
        (2, "run", "editor", "awaiting_approval"), (4, "tool", "publish", "awaiting_approval"),
    ]  # fmt: skip
