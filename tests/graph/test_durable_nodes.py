"""Durability inside nodes: a budget interrupt suspends the graph; mapped items resume.

A governed call over a mutable limit, with no handler, suspends the execution; a fresh
graph with a fresh governor resumes it with a mutation (the counters come back from the
checkpoint). A map whose item failed resumes running only that item: the items that had
finished keep their saved outputs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from bastion.governance import Governor, Limit, MutateDecision
from bastion.graph import Graph, NodeContext, StoreCheckpointer
from bastion.testing import VirtualClock
from bastion.tools import Directive, InterruptResolution


def budget_graph(url: str, ran: list[str]) -> Graph:
    """first → second, each one call on ``api`` (1 call a day, raisable by ops)."""
    governor = Governor(
        oracles={"api": [Limit(type="calls", max=1, window="day", mutable={"ops": True})]},
        clock=VirtualClock(start=0.0),
    )

    async def first(inputs: list[Any], ctx: NodeContext) -> Any:
        ran.append("first")
        return await ctx.oracle.call("api", lambda: "one")

    async def second(inputs: list[Any], ctx: NodeContext) -> Any:
        ran.append("second")
        return [inputs[0], await ctx.oracle.call("api", lambda: "two")]

    graph = Graph("budget", governor=governor, checkpointer=StoreCheckpointer(url))
    graph.add_node("first", first).add_node("second", second).add_edge("first", "second")
    return graph


async def test_a_budget_interrupt_suspends_and_a_mutation_resumes(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'budget.db'}"
    ran: list[str] = []
    result = await budget_graph(url, ran).run(None, execution_id="gx_budget")
    assert result.status == "suspended"
    record = await StoreCheckpointer(url).record("gx_budget")
    [pending] = record.pending
    assert (pending["node"], pending["kind"], pending["action"]) == ("second", "limit", "api")

    fresh: list[str] = []
    raised = MutateDecision(oracle="api", limit_type="calls", max=2, approver="ops")
    directive = Directive(
        interrupts=[InterruptResolution(interrupt_id=str(pending["id"]), decision=raised)]
    )
    resumed = await budget_graph(url, fresh).resume("gx_budget", directive)
    assert resumed.status == "completed"
    assert resumed.output == ["one", "two"]
    assert fresh == ["second"]  # first's call is not made (nor counted) again


def mapped_graph(url: str, ran: list[str], *, fail: int | None) -> Graph:
    """A map of ``double`` over the input; the item at index ``fail`` raises."""

    async def double(inputs: list[Any]) -> int:
        value = int(inputs[0])
        ran.append(f"double:{value}")
        if value == fail:
            raise RuntimeError(f"item {value} failed")
        return value * 2

    item = Graph("item").add_node("double", double)
    graph = Graph("mapper", checkpointer=StoreCheckpointer(url))
    graph.add_map("each", item, max_concurrency=2)
    graph.add_node("total", lambda inputs: sum(inputs[0]))
    graph.add_edge("each", "total")
    return graph


async def test_a_map_resumes_only_the_items_that_had_not_finished(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'map.db'}"
    ran: list[str] = []
    failed = await mapped_graph(url, ran, fail=3).run([1, 2, 3, 4], execution_id="gx_map")
    assert failed.status == "failed"
    assert sorted(ran) == ["double:1", "double:2", "double:3", "double:4"]
    again: list[str] = []
    result = await mapped_graph(url, again, fail=None).resume("gx_map")
    assert result.status == "completed"
    assert result.output == 20
    assert again == ["double:3"]  # the three finished items kept their outputs
