"""``Workflow``: function steps, conditions, parallel steps, retries (a layer on Graph)."""

from __future__ import annotations

from typing import Any

from bastion.graph import Graph, RetryPolicy, Workflow
from bastion.testing import VirtualClock

State = dict[str, Any]


async def test_workflow_steps_conditions_parallel_retries_and_no_steps() -> None:
    # covers §3.3 scenario 20 (agentium Workflow)
    clock = VirtualClock()
    attempts = 0

    def fetch(state: State) -> State:
        return {"items": [1, 2, 3]}

    async def total(state: State) -> State:
        return {"total": sum(state["items"])}

    def flaky(state: State) -> State:
        nonlocal attempts
        attempts += 1
        if attempts < 3:
            raise ConnectionError("try again")
        return {"saved": True}

    def double(state: State) -> State:
        return {"doubled": state["total"] * 2}

    def broken(state: State) -> State:
        raise ValueError("this branch fails")

    def tag(state: State) -> None:
        state["ignored"] = True  # a step works on a copy: only returned updates count

    flow = (
        Workflow("checkout", clock=clock)
        .step(fetch)
        .step(total)
        .when(lambda s: s["total"] > 5, double)
        .when(lambda s: s["total"] > 100, lambda s: {"big": True})
        .parallel(lambda s: {"a": 1}, broken, lambda s: {"b": 2})
        .step(flaky, retry=RetryPolicy(max_attempts=3, backoff=0.5))
        .step(tag)
    )
    result = await flow.run({"user": "ada"})
    assert result.state == {
        "user": "ada",
        "items": [1, 2, 3],
        "total": 6,
        "doubled": 12,
        "a": 1,
        "b": 2,
        "saved": True,
    }
    assert attempts == 3
    assert clock.sleeps == [0.5, 1.0]
    assert result.status == "failed"  # the broken parallel step; its siblings went on
    assert [type(e).__name__ for e in result.errors.values()] == ["ValueError"]

    empty = await Workflow("nothing").run({"x": 1})
    assert (empty.state, empty.status) == ({"x": 1}, "completed")


async def test_a_step_that_keeps_failing_stops_the_steps_after_it() -> None:
    ran: list[str] = []

    def first(state: State) -> State:
        ran.append("first")
        return {"n": 1}

    def fails(state: State) -> State:
        raise RuntimeError("down")

    def after(state: State) -> State:
        ran.append("after")
        return {}

    flow = Workflow("stops", retry=RetryPolicy(max_attempts=2), clock=VirtualClock())
    result = await flow.step(first).step(fails).step(after).run()
    assert ran == ["first"]
    assert result.state == {"n": 1}
    assert result.status == "failed"
    graph = flow.to_graph()
    assert isinstance(graph, Graph)
    assert list(graph.specs) == ["s0_first", "s1_fails", "s2_after", "__end__"]
