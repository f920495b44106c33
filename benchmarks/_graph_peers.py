"""The peers' side of ``benchmarks.graph``: LangGraph and pydantic-graph on the same workloads.

Each workload is a builder returning ``(graph, run)``: building is timed separately (the
10,000-node build), ``await run()`` executes once and returns a value the caller checks.
Every node is a zero-latency ``async def`` adding 1, so what is measured is the framework.

LangGraph: a ``StateGraph`` over a ``TypedDict`` whose ``count`` channel sums the nodes'
writes (``Annotated[int, operator.add]``); fan-out with ``Send``. Checkpointed runs use
``InMemorySaver`` (``langgraph-checkpoint-sqlite`` / ``-postgres`` are not in the lock).
pydantic-graph: ``GraphBuilder`` steps; fan-out with ``broadcast`` / ``map`` and a
``reduce_sum`` join.
"""

from __future__ import annotations

import itertools
import operator
import pickle
from collections.abc import Awaitable, Callable
from typing import Annotated, Any, TypedDict

__all__ = ["LANGGRAPH", "PYDANTIC_GRAPH", "Workload"]

Workload = Callable[[int], tuple[object, Callable[[], Awaitable[int]]]]


class _State(TypedDict):
    count: Annotated[int, operator.add]


def _merge(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {**a, **b}


class _Keyed(TypedDict, total=False):
    outputs: Annotated[dict[str, int], _merge]


class _ItemState(TypedDict):
    count: Annotated[int, operator.add]
    item: int


def _lg_step() -> Callable[[_State], Awaitable[dict[str, int]]]:
    async def step(state: _State) -> dict[str, int]:
        del state
        return {"count": 1}

    return step


def lg_chain(n: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """``n`` nodes in a row."""
    from langgraph.graph import END, START, StateGraph

    builder: Any = StateGraph(_State)
    for i in range(n):
        builder.add_node(f"n{i}", _lg_step())
        builder.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    builder.add_edge(f"n{n - 1}", END)
    graph = builder.compile()

    async def run() -> int:
        out = await graph.ainvoke({"count": 0}, {"recursion_limit": n + 10})
        return int(out["count"])

    return graph, run


def lg_dag(width: int, depth: int = 10) -> tuple[object, Callable[[], Awaitable[int]]]:
    """``width`` parallel lanes of ``depth`` nodes: ``depth`` super-steps of ``width`` nodes."""
    from langgraph.graph import END, START, StateGraph

    builder: Any = StateGraph(_State)
    for lane in range(width):
        for level in range(depth):
            builder.add_node(f"n{level}_{lane}", _lg_step())
            builder.add_edge(START if level == 0 else f"n{level - 1}_{lane}", f"n{level}_{lane}")
        builder.add_edge(f"n{depth - 1}_{lane}", END)
    graph = builder.compile()

    async def run() -> int:
        out = await graph.ainvoke({"count": 0}, {"recursion_limit": depth + 10})
        return int(out["count"])

    return graph, run


def lg_cycle(rounds: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """One node looping on itself ``rounds`` times (a conditional back edge)."""
    from langgraph.graph import END, START, StateGraph

    builder: Any = StateGraph(_State)
    builder.add_node("loop", _lg_step())
    builder.add_edge(START, "loop")

    def route(state: _State) -> str:
        return END if state["count"] >= rounds else "loop"

    builder.add_conditional_edges("loop", route, ["loop", END])
    graph = builder.compile()

    async def run() -> int:
        out = await graph.ainvoke({"count": 0}, {"recursion_limit": rounds + 10})
        return int(out["count"])

    return graph, run


def lg_map(items: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """A fan-out of ``items`` ``Send``s to one node, summed by the channel's reducer."""
    from langgraph.graph import END, START, StateGraph
    from langgraph.types import Send

    async def work(state: _ItemState) -> dict[str, int]:
        return {"count": 1 + 0 * state["item"]}

    builder: Any = StateGraph(_ItemState)
    builder.add_node("work", work)

    def fan_out(state: _ItemState) -> list[Any]:
        del state
        return [Send("work", {"item": i, "count": 0}) for i in range(items)]

    builder.add_conditional_edges(START, fan_out)
    builder.add_edge("work", END)
    graph = builder.compile()

    async def run() -> int:
        out = await graph.ainvoke({"count": 0, "item": 0})
        return int(out["count"])

    return graph, run


def lg_checkpointed(n: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """The chain with ``InMemorySaver``: a checkpoint per super-step (a fresh thread a run)."""
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    builder: Any = StateGraph(_State)
    for i in range(n):
        builder.add_node(f"n{i}", _lg_step())
        builder.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    builder.add_edge(f"n{n - 1}", END)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    runs = iter(range(1 << 62))

    async def run() -> int:
        config = {"configurable": {"thread_id": f"t{next(runs)}"}, "recursion_limit": n + 10}
        out = await graph.ainvoke({"count": 0}, config)
        return int(out["count"])

    return graph, run


async def lg_checkpoint_bytes(n: int) -> tuple[int, int]:
    """Bytes InMemorySaver adds at the first and the last super-step of an ``n``-node chain.

    Each node adds its output under its own key of one ``outputs`` channel (a merging
    reducer): the state a checkpoint keeps grows with the history. Measured as the growth
    of the saver's pickled storage after each step.
    """
    from langgraph.checkpoint.memory import InMemorySaver
    from langgraph.graph import END, START, StateGraph

    def keyed(i: int) -> Callable[[_Keyed], Awaitable[dict[str, dict[str, int]]]]:
        async def step(state: _Keyed) -> dict[str, dict[str, int]]:
            del state
            return {"outputs": {f"n{i}": i}}

        return step

    builder: Any = StateGraph(_Keyed)
    for i in range(n):
        builder.add_node(f"n{i}", keyed(i))
        builder.add_edge(START if i == 0 else f"n{i - 1}", f"n{i}")
    builder.add_edge(f"n{n - 1}", END)
    saver = InMemorySaver()
    graph = builder.compile(checkpointer=saver)
    config: Any = {"configurable": {"thread_id": "size"}, "recursion_limit": n + 10}

    def stored() -> int:
        return len(pickle.dumps((dict(saver.storage), dict(saver.writes), dict(saver.blobs))))

    sizes = [stored()]
    sizes += [stored() async for _ in graph.astream({"outputs": {}}, config, stream_mode="updates")]
    growth = [b - a for a, b in itertools.pairwise(sizes)]
    return growth[0], growth[-1]


def pg_chain(n: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """``n`` steps in a row."""
    from pydantic_graph import GraphBuilder, StepContext

    g: Any = GraphBuilder(input_type=int, output_type=int)

    async def add_one(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs + 1

    steps = [g.step(add_one, node_id=f"n{i}") for i in range(n)]
    g.add(g.edge_from(g.start_node).to(steps[0]))
    for a, b in itertools.pairwise(steps):
        g.add(g.edge_from(a).to(b))
    g.add(g.edge_from(steps[-1]).to(g.end_node))
    graph = g.build()

    async def run() -> int:
        return int(await graph.run(inputs=0))

    return graph, run


def pg_dag(width: int, depth: int = 10) -> tuple[object, Callable[[], Awaitable[int]]]:
    """``width`` parallel lanes of ``depth`` steps (a broadcast), joined by a sum."""
    from pydantic_graph import GraphBuilder, StepContext, reduce_sum

    g: Any = GraphBuilder(input_type=int, output_type=int)

    async def add_one(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs + 1

    join = g.join(reduce_sum, initial=0)
    heads: list[Any] = []
    for lane in range(width):
        lane_steps = [g.step(add_one, node_id=f"n{level}_{lane}") for level in range(depth)]
        for a, b in itertools.pairwise(lane_steps):
            g.add(g.edge_from(a).to(b))
        g.add(g.edge_from(lane_steps[-1]).to(join))
        heads.append(lane_steps[0])
    g.add(g.edge_from(g.start_node).to(*heads))
    g.add(g.edge_from(join).to(g.end_node))
    graph = g.build()

    async def run() -> int:
        return int(await graph.run(inputs=0))

    return graph, run


def pg_cycle(rounds: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """One step looping on itself through a decision, ``rounds`` times."""
    from pydantic_graph import GraphBuilder, StepContext, TypeExpression

    g: Any = GraphBuilder(input_type=int, output_type=int)

    @g.step
    async def loop(ctx: StepContext[None, None, int]) -> int:
        return ctx.inputs + 1

    def done(value: int) -> bool:
        return value >= rounds

    g.add(
        g.edge_from(g.start_node).to(loop),
        g.edge_from(loop).to(
            g.decision()
            .branch(g.match(TypeExpression[int], matches=done).to(g.end_node))
            .branch(g.match(TypeExpression[int]).to(loop))
        ),
    )
    graph = g.build()

    async def run() -> int:
        return int(await graph.run(inputs=0))

    return graph, run


def pg_map(items: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    """A ``map`` over ``items`` values into one step, joined by a sum."""
    from pydantic_graph import GraphBuilder, StepContext, reduce_sum

    g: Any = GraphBuilder(input_type=list[int], output_type=int)

    @g.step
    async def work(ctx: StepContext[None, None, int]) -> int:
        return 1 + 0 * ctx.inputs

    join = g.join(reduce_sum, initial=0)
    g.add(
        g.edge_from(g.start_node).map().to(work),
        g.edge_from(work).to(join),
        g.edge_from(join).to(g.end_node),
    )
    graph = g.build()
    values = list(range(items))

    async def run() -> int:
        return int(await graph.run(inputs=values))

    return graph, run


def _lg_dag100(width: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    return lg_dag(width)


def _pg_dag100(width: int) -> tuple[object, Callable[[], Awaitable[int]]]:
    return pg_dag(width)


LANGGRAPH: dict[str, Workload] = {
    "chain": lg_chain,
    "dag": _lg_dag100,
    "cycle": lg_cycle,
    "map": lg_map,
    "checkpointed": lg_checkpointed,
}
"""LangGraph's builder per workload (the argument is the size; the DAG takes its width)."""

PYDANTIC_GRAPH: dict[str, Workload] = {
    "chain": pg_chain,
    "dag": _pg_dag100,
    "cycle": pg_cycle,
    "map": pg_map,
}
"""pydantic-graph's builder per workload (it has no checkpointer to compare)."""
