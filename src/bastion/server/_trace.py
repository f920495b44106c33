"""The trace of a run or graph execution: a tree of timed spans built from its logged events.

Events carry no clock; each logged batch does (the time the store accepted it). A span
starts at its first event's batch and ends at its last one's; a span whose end event
tells its own duration (a tool call, a run's segment) starts no later than that duration
before its end, so a fast run written in one batch still gets bars of its real length.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from ._events import LoggedEvent
from ._trace_models import SpanKind, Trace, TraceSpan, TraceTokens
from ._wire import JsonValue, loads_object, number, object_at

__all__ = ["build_trace"]

_TEXT_LIMIT = 2_000
_MODEL_ENDS = frozenset({"text.complete", "tool.execute.start", "tool.approval.requested"})


@dataclass(slots=True)
class _Span:
    """A span while the trace is built (closed spans have an ``end``)."""

    id: str
    kind: SpanKind
    name: str
    start: float
    status: str = "running"
    end: float | None = None
    tokens: TraceTokens | None = None
    error: str | None = None
    attributes: dict[str, JsonValue] = field(default_factory=dict[str, JsonValue])
    children: list[_Span] = field(default_factory=list["_Span"])

    def open(self, span: _Span) -> _Span:
        self.children.append(span)
        return span

    def close(self, at: float, status: str, *, took: float | None = None) -> None:
        """End the span at ``at``, or sooner when it says how long it ``took``.

        Such a span ends no later than that after its start (ends are logged late, in
        call order) and starts no later than that before its end (a start logged in the
        same batch as its end).
        """
        self.status = status
        self.end = at if took is None else min(at, self.start + took)
        if took is not None:
            self.start = min(self.start, self.end - took)

    def view(self) -> TraceSpan:
        """The span as the API returns it (``end`` is ``None`` while it is open)."""
        return TraceSpan(
            id=self.id, kind=self.kind, name=self.name, start=round(self.start, 6),
            end=round(self.end, 6) if self.end is not None else None,
            status=self.status, tokens=self.tokens, error=self.error,
            attributes=self.attributes, children=[c.view() for c in self.children],
        )  # fmt: skip


def _text(value: object) -> str:
    text = value if isinstance(value, str) else json.dumps(value, default=repr)
    return text if len(text) <= _TEXT_LIMIT else text[:_TEXT_LIMIT] + "…"


def _tokens(usage: JsonValue) -> TraceTokens | None:
    if not isinstance(usage, dict):
        return None
    cost = usage.get("cost_usd")
    return TraceTokens(
        prompt=int(number(usage.get("prompt_tokens"))),
        completion=int(number(usage.get("completion_tokens"))),
        cost_usd=float(cost) if isinstance(cost, (int, float)) else None,
    )


class _RunScope:
    """The spans of one agent run: its steps, model calls, tool calls and sub-agent runs."""

    def __init__(self, run: _Span) -> None:
        self.run = run
        self.step: _Span | None = None
        self.model: _Span | None = None
        self.tools: dict[str, _Span] = {}
        self.children: dict[str, _RunScope] = {}

    def apply(self, data: dict[str, JsonValue], at: float) -> None:
        """Take one event of the run (an inner event of a sub-agent goes to its scope)."""
        kind = str(data.get("type"))
        if kind in _MODEL_ENDS or kind == "step.end":
            self._end_model(at)
        if kind.startswith(("tool.execute.", "tool.approval.requested")):
            self._tool_event(kind, data, at)
        elif kind == "agent.start":
            self._started(data)
        elif kind == "step.start":
            self._step(data, at)
        elif kind == "step.end" and self.step is not None:
            self._step_ended(data, at, self.step)
        elif kind == "subagent.event":
            self._child(data, at)
        elif kind == "agent.error":
            self.run.error = f"{data.get('code')}: {data.get('message')}"
        elif kind == "agent.end":
            self._ended(data, at)

    def _tool_event(self, kind: str, data: dict[str, JsonValue], at: float) -> None:
        tool = self._tool(data, at)
        took = number(data.get("duration"))
        if kind == "tool.execute.start":
            tool.attributes["arguments"] = _text(data.get("arguments", ""))
        elif kind == "tool.execute.end":
            tool.close(at, "ok", took=took)
            tool.attributes["result"] = _text(data.get("result", ""))
        elif kind == "tool.execute.error":
            tool.close(at, "error", took=took)
            tool.error = f"{data.get('kind')}: {data.get('message')}"
        elif kind == "tool.approval.requested":
            tool.status = "awaiting_approval"

    def _step_ended(self, data: dict[str, JsonValue], at: float, step: _Span) -> None:
        step.close(at, "ok")
        step.tokens = _tokens(data.get("usage"))
        step.attributes["finish_reason"] = data.get("finish_reason")
        if step.children and step.children[0].kind == "model":
            step.children[0].tokens = step.tokens  # one model call per step

    def _started(self, data: dict[str, JsonValue]) -> None:
        self.run.status = "running"
        self.run.end = None
        self.run.attributes.setdefault("model", data.get("model"))
        if data.get("resumed"):
            self.run.attributes["segments"] = (
                int(number(self.run.attributes.get("segments", 1))) + 1
            )

    def _step(self, data: dict[str, JsonValue], at: float) -> None:
        number, model = data.get("step"), str(data.get("model", ""))
        step = self.run.open(_Span(f"{self.run.id}/step-{number}", "step", f"step {number}", at))
        step.attributes["model"] = model
        self.step = step
        self.model = step.open(_Span(f"{step.id}/model", "model", model or "model", at))

    def _end_model(self, at: float) -> None:
        if self.model is not None:
            self.model.close(at, "ok")
            self.model = None

    def _tool(self, data: dict[str, JsonValue], at: float) -> _Span:
        call = str(data.get("tool_call_id"))
        tool = self.tools.get(call)
        if tool is None:
            name = str(data.get("tool_name") or "tool")
            parent = self.step or self.run
            tool = parent.open(_Span(f"{self.run.id}/{call}", "tool", name, at))
            tool.attributes["tool_call_id"] = call
            self.tools[call] = tool
        elif tool.end is not None and data.get("type") == "tool.execute.start":
            tool.end, tool.status = None, "running"  # resumed after an approval
        return tool

    def _child(self, data: dict[str, JsonValue], at: float) -> None:
        inner = object_at(data, "event")
        child_run = str(data.get("child_run_id") or inner.get("run_id") or "")
        key = f"{data.get('tool_call_id')}:{child_run}"
        scope = self.children.get(key)
        if scope is None:
            tool = self._tool({**data, "tool_name": data.get("agent_name")}, at)
            name = str(data.get("agent_name") or "sub-agent")
            run = tool.open(_Span(child_run or f"{tool.id}/run", "run", name, at))
            run.attributes["run_id"] = child_run
            scope = self.children[key] = _RunScope(run)
        scope.apply(inner, at)

    def _ended(self, data: dict[str, JsonValue], at: float) -> None:
        status = str(data.get("status"))
        whole = int(number(self.run.attributes.get("segments", 1))) == 1  # else: the last segment's
        self.run.close(at, status, took=number(data.get("duration")) if whole else None)
        self.run.tokens = _tokens(data.get("usage"))
        error = data.get("error")
        if isinstance(error, dict) and self.run.error is None:
            self.run.error = f"{error.get('code')}: {error.get('message')}"
        for step in self.run.children:
            if step.end is None:
                step.close(at, "unfinished")


class _GraphScope:
    """The spans of a graph execution: graphs, their node runs, the agent runs of nodes."""

    def __init__(self, root: _Span) -> None:
        self.root = root
        self.graphs: dict[str, _Span] = {}
        self.nodes: dict[str, _Span] = {}
        self.runs: dict[str, _RunScope] = {}

    def apply(self, data: dict[str, JsonValue], at: float) -> None:
        kind = str(data.get("type"))
        if kind == "graph.before":
            self._graph(data, at)
        elif kind == "graph.after":
            graph = self._graph(data, at)
            graph.close(at, str(data.get("status")))
            graph.attributes["rounds"] = data.get("rounds")
        elif kind == "graph.error":
            self._graph(data, at).error = str(data.get("error"))
        elif kind == "node.before":
            node = self._node(data, at)
            node.attributes["round"] = data.get("round")
            if node.end is not None:  # run again on a resume: it goes on from here
                node.attributes["before_resume"] = f"{node.status}: {node.error}"
                node.end, node.status, node.error = None, "running", None
        elif kind == "node.after":
            node = self._node(data, at)
            node.close(at, "ok")
            node.attributes["output"] = _text(data.get("output"))
        elif kind == "node.error":
            node = self._node(data, at)
            node.close(at, str(data.get("kind") or "error"))
            node.error = str(data.get("error"))
        elif kind == "node.agent":
            self._agent(data, at)
        elif kind == "server.error":
            self.root.error = str(data.get("error"))

    def _graph(self, data: dict[str, JsonValue], at: float) -> _Span:
        graph_id = str(data.get("graph_id"))
        graph = self.graphs.get(graph_id)
        if graph is not None:
            return graph
        if not self.graphs:
            graph = self.root
            graph.name, graph.start = str(data.get("key")), at
        else:
            parent = self._runner(graph_id)
            graph = parent.open(_Span(graph_id, "graph", str(data.get("key")), at))
        graph.attributes["graph_id"] = graph_id
        self.graphs[graph_id] = graph
        return graph

    def _runner(self, graph_id: str) -> _Span:
        """The node span that runs a nested graph (``key#<node id's path>[index]``)."""
        path = graph_id.partition("#")[2]
        for node_id, node in reversed(self.nodes.items()):
            if path.startswith(node_id.partition("#")[2]):
                return node
        return next((n for n in reversed(self.nodes.values()) if n.end is None), self.root)

    def _node(self, data: dict[str, JsonValue], at: float) -> _Span:
        node_id = str(data.get("node_id"))
        node = self.nodes.get(node_id)
        if node is None:
            graph = self._graph(data, at)
            node = graph.open(_Span(node_id, "node", str(data.get("node_key")), at))
            node.attributes["node_id"] = node_id
            self.nodes[node_id] = node
        return node

    def _agent(self, data: dict[str, JsonValue], at: float) -> None:
        event = object_at(data, "event")
        key = f"{data.get('node_id')}:{event.get('run_id')}"
        scope = self.runs.get(key)
        if scope is None:
            node = self._node(data, at)
            name = str(event.get("agent_name") or "agent")
            run = node.open(_Span(str(event.get("run_id")), "run", name, at))
            run.attributes["run_id"] = event.get("run_id")
            scope = self.runs[key] = _RunScope(run)
        scope.apply(event, at)


def build_trace(
    trace_id: str, kind: str, events: Sequence[tuple[datetime, LoggedEvent]], *, live: bool
) -> Trace:
    """The trace of a run (``kind="run"``) or a graph execution (``"execution"``).

    ``events`` are the logged events with the time each one's batch was written, in order.
    """
    origin = events[0][0] if events else None
    root = _Span(trace_id, "run" if kind == "run" else "graph", trace_id, 0.0)
    scope: _RunScope | _GraphScope = _RunScope(root) if kind == "run" else _GraphScope(root)
    last = 0.0
    for written, event in events:
        at = (written - origin).total_seconds() if origin is not None else 0.0
        last = max(last, at)
        data = loads_object(event.data, "A logged event")
        if kind == "run" and data.get("type") == "agent.start" and root.name == trace_id:
            root.name = str(data.get("agent_name"))
            root.attributes["run_id"] = trace_id
        scope.apply(data, at)
    shift = -min(0.0, _earliest(root))  # a span moved before the first batch by its duration
    _shift(root, shift, 0.0)
    return Trace(
        id=trace_id, kind="run" if kind == "run" else "execution",
        started_at=origin - timedelta(seconds=shift) if origin is not None else None,
        duration=round(last + shift, 6), live=live, spans=[root.view()],
    )  # fmt: skip


def _earliest(span: _Span) -> float:
    return min([span.start, *(_earliest(c) for c in span.children)])


def _shift(span: _Span, by: float, floor: float, ceiling: float | None = None) -> None:
    """Move the span by ``by`` seconds, inside its parent's bar (``floor`` to ``ceiling``).

    Batches are written a little after their events: a child's last batch may come after
    its parent's duration, measured in the process, says it ended.
    """
    span.start = max(span.start + by, floor)
    if ceiling is not None:
        span.start = min(span.start, ceiling)
    if span.end is not None:
        span.end = span.end + by if ceiling is None else min(span.end + by, ceiling)
        span.end = max(span.end, span.start)
    for child in span.children:
        _shift(child, by, span.start, span.end)
