"""Graphs the Temporal tests run, shared by the test process and the worker processes."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from bastion.distributed import TemporalGraph
from bastion.graph import Graph, NodeContext, NodeInterrupt

from ._agents import adder

GRAPH_CRASH_QUEUE = "bastion-test-graph-crash"


def pipeline() -> Graph:
    """A DAG: ``start`` fans out to ``double`` and ``square``, ``join`` sums them."""
    graph = Graph("pipeline")
    graph.add_node("start", lambda inputs: {"n": inputs[0]})
    graph.add_node("double", lambda inputs: inputs[0]["n"] * 2)
    graph.add_node("square", lambda inputs: inputs[0]["n"] ** 2)
    graph.add_node("join", sum)
    for source, target in [
        ("start", "double"),
        ("start", "square"),
        ("double", "join"),
        ("square", "join"),
    ]:
        graph.add_edge(source, target)
    return graph


def counter() -> Graph:
    """A cycle: ``inc`` adds one and comes back to itself while the value is below 3."""
    graph = Graph("counter", max_rounds=10)
    graph.add_node("inc", lambda inputs: inputs[0] + 1)
    graph.add_node("done", lambda inputs: f"reached {inputs[0]}")
    graph.add_edge("inc", "inc", when=lambda value: value < 3)
    graph.add_edge("inc", "done", when=lambda value: value >= 3)
    return graph


def squares() -> Graph:
    """A map: each element of the input list is squared by a child workflow, then summed."""
    one = Graph("square_one")
    one.add_node("square", lambda inputs: inputs[0] ** 2)
    graph = Graph("squares")
    graph.add_node("split", lambda inputs: list(inputs[0]))
    graph.add_map("each", one, max_concurrency=2)
    graph.add_node("total", lambda inputs: sum(inputs[0]))
    graph.add_edge("split", "each").add_edge("each", "total")
    return graph


async def _review(inputs: list[Any], ctx: NodeContext) -> str:
    verdict = await ctx.pause({"draft": inputs[0]}, reason="approve the draft")
    return f"{inputs[0]} [{verdict}]"


def _title(inputs: list[Any]) -> str:
    if not inputs[0]:
        raise NodeInterrupt({"missing": "title"}, reason="name it")
    return str(inputs[0]).title()


def review() -> Graph:
    """A pause: ``review`` waits for a person's verdict; ``title`` interrupts on no input."""
    graph = Graph("review")
    graph.add_node("title", _title)
    graph.add_node("draft", lambda inputs: f"Draft on {inputs[0]}")
    graph.add_node("review", _review)
    graph.add_edge("title", "draft").add_edge("draft", "review")
    return graph


def with_agent() -> Graph:
    """An agent node (the ``adder`` agent, run as its own child workflow) after a function."""
    graph = Graph("with_agent")
    graph.add_node("ask", lambda inputs: f"Add {inputs[0]} and 3")
    graph.add_node("adder", adder())
    graph.add_node("shout", lambda inputs: str(inputs[0]).upper())
    graph.add_edge("ask", "adder").add_edge("adder", "shout")
    return graph


def _bump(path: Path) -> int:
    """Add one to the count kept in ``path`` and return it (survives the process)."""
    count = int(path.read_text()) + 1 if path.exists() else 1
    path.write_text(str(count))
    return count


def crash_graph(workdir: Path) -> TemporalGraph:
    """``first`` → ``slow`` → ``last``; each run counted in a file of ``workdir``.

    ``slow`` prints ``SLOW_STARTED``; its first run never returns (the test kills the worker
    in the middle of it).
    """
    graph = Graph("crashy")

    def first(inputs: list[Any]) -> int:
        _bump(workdir / "first")
        return int(inputs[0]) + 1

    async def slow(inputs: list[Any]) -> int:
        runs = _bump(workdir / "slow")
        print("SLOW_STARTED", flush=True)
        if runs == 1:
            await asyncio.Event().wait()  # the worker is killed here
        return int(inputs[0]) * 10

    def last(inputs: list[Any]) -> str:
        _bump(workdir / "last")
        return f"result {inputs[0]}"

    graph.add_node("first", first).add_node("slow", slow).add_node("last", last)
    graph.add_edge("first", "slow").add_edge("slow", "last")
    return TemporalGraph(graph, task_queue=GRAPH_CRASH_QUEUE, heartbeat_timeout=1.0)


def served() -> list[Graph]:
    """The graphs ``bastion worker tests.distributed._graphs:served`` serves."""
    return [pipeline(), review()]
