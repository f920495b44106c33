"""Oracles inside nodes, through the graph API: limits, hierarchy, interrupts, windows."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

from bastion.governance import (
    ActionTimeout,
    Denied,
    Governor,
    Interrupt,
    InterruptContext,
    Limit,
    MutateDecision,
    Oracle,
    PolicyExceeded,
    RetryDecision,
)
from bastion.graph import Graph, GraphResult, GraphSignal, NodeContext, NodeError, NodeInterrupt
from bastion.testing import VirtualClock


def names(signals: list[GraphSignal]) -> list[str]:
    return [getattr(s, "name", s.type) for s in signals]


async def streamed(graph: Graph, input: Any = None) -> tuple[list[GraphSignal], GraphResult]:
    stream = graph.stream(input)
    signals = [signal async for signal in stream]
    assert stream.result is not None
    return signals, stream.result


def node_errors(signals: list[GraphSignal]) -> dict[str, NodeError]:
    return {s.node_key: s for s in signals if isinstance(s, NodeError)}


def costs(amount: float) -> Callable[[], dict[str, float]]:
    return lambda: {"cost": amount}


def cost_of(result: Any) -> float:
    return float(result["cost"])


async def test_after_pairs_with_before_and_exec_in_with_exec_out_on_every_path() -> None:
    # covers L-02, L-29 (scenario 4: success, a node that throws, a PolicyExceeded)
    governor = Governor(
        oracles={"api": [Limit(type="calls", max=1, window="invocation")]}, clock=VirtualClock()
    )
    graph = Graph("paths", governor=governor)

    async def ok(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("api:a", fn=lambda: "fine")

    async def over(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("api:b", fn=lambda: "never")  # the limit is spent by now

    def throws(inputs: list[Any]) -> None:
        raise ValueError("boom")

    graph.add_node("ok", ok).add_node("over", over).add_node("throws", throws)
    graph.add_edge("ok", "over").add_edge("ok", "throws")
    signals, result = await streamed(graph)
    assert names(signals).count("graph.before") == names(signals).count("graph.after") == 1
    exec_in = [s for s in signals if s.type == "oracle.exec.in"]
    exec_out = [s for s in signals if s.type == "oracle.exec.out"]
    assert [s.action_id for s in exec_in] == [s.action_id for s in exec_out]
    errors = node_errors(signals)
    assert isinstance(errors["over"].exception, PolicyExceeded)
    assert isinstance(errors["throws"].exception, ValueError)
    assert result.status == "failed"
    assert result.outputs == {"ok": "fine"}


async def test_a_child_key_inherits_its_parents_limit() -> None:
    # covers L-11, L-14 (scenario 5: "llm" calls max 1, the child only has a timeout)
    governor = Governor(
        oracles={
            "llm": [Limit(type="calls", max=1, window="invocation")],
            "llm:anthropic:claude": [Limit(type="timeout", max=45)],
        },
        clock=VirtualClock(),
    )
    graph = Graph("hierarchy", governor=governor)

    async def twice(inputs: list[Any], ctx: NodeContext) -> list[str]:
        first = await ctx.oracle.call("llm:anthropic:claude", lambda: "one")
        second = await ctx.oracle.call("llm:anthropic:claude", lambda: "two")
        return [first, second]

    graph.add_node("twice", twice)
    signals, result = await streamed(graph)
    error = node_errors(signals)["twice"].exception
    assert isinstance(error, PolicyExceeded)
    assert (error.oracle, error.limit_type, error.max) == ("llm", "calls", 1)
    assert result.status == "failed"


async def test_counters_include_the_ancestor_keys() -> None:
    # covers L-11, L-31 (scenario 6)
    governor = Governor(
        oracles={
            "llm": [Limit(type="calls", max=100, window="day")],
            "llm:anthropic": [Limit(type="calls", max=10, window="hour")],
            "llm:anthropic:claude": [Limit(type="calls", max=5, window="minute")],
        },
        clock=VirtualClock(),
    )
    graph = Graph("counting", governor=governor)

    async def count(inputs: list[Any], ctx: NodeContext) -> list[tuple[str, float, float]]:
        await ctx.exec("llm:anthropic:claude", fn=lambda: None)
        views = await ctx.counters("llm:anthropic:claude")
        return [(v.oracle, v.accumulated, v.max) for v in views]

    graph.add_node("count", count)
    result = await graph.run()
    assert result.output == [
        ("llm", 1, 100),
        ("llm:anthropic", 1, 10),
        ("llm:anthropic:claude", 1, 5),
    ]


async def test_a_spent_fixed_budget_fails_the_node_and_the_graph_goes_on() -> None:
    # covers L-17, L-28, L-29 (scenario 7)
    governor = Governor(
        oracles={"llm": [Limit(type="cost", max=1.0, window="day", extract=cost_of)]},
        clock=VirtualClock(),
    )
    graph = Graph("budget", governor=governor)

    async def spend(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("llm:x", fn=costs(1.0))

    async def again(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("llm:x", fn=costs(1.0))

    graph.add_node("spend", spend).add_node("again", again)
    graph.add_node("independent", lambda inputs: "still runs")
    graph.add_edge("spend", "again").add_edge("spend", "independent")
    signals, result = await streamed(graph)
    exceeded = [s for s in signals if s.type == "oracle.exceeded"]
    assert [(s.oracle, s.limit_type, s.current, s.max) for s in exceeded] == [
        ("llm", "cost", 1.0, 1.0)
    ]
    assert set(node_errors(signals)) == {"again"}
    assert result.outputs["independent"] == "still runs"


def mutable_cost_governor(answer: float, clock: VirtualClock) -> Governor:
    def approve(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        return MutateDecision(oracle="llm", limit_type="cost", max=answer, approver="human")

    return Governor(
        oracles={
            "llm": [
                Limit(
                    type="cost",
                    max=10,
                    window="day",
                    extract=cost_of,
                    mutable={"human": lambda next, current, max: next <= 50},
                )
            ]
        },
        handle_interrupt=approve,
        clock=clock,
    )


def spending_graph(governor: Governor) -> Graph:
    graph = Graph("spending", governor=governor)

    async def first(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("llm:claude", fn=costs(10))

    async def second(inputs: list[Any], ctx: NodeContext) -> Any:
        return (await ctx.exec("llm:claude", fn=costs(5)))["cost"]

    graph.add_node("first", first).add_node("second", second).add_edge("first", "second")
    return graph


async def test_a_mutable_limit_interrupts_and_a_mutation_within_the_ceiling_goes_through() -> None:
    # covers L-23, L-24, L-27, L-29 (scenario 8)
    signals, result = await streamed(spending_graph(mutable_cost_governor(25, VirtualClock())))
    decisions = [n for n in names(signals) if n.startswith(("oracle.interrupt", "oracle.mutation"))]
    assert decisions == ["oracle.interrupt.in", "oracle.mutation.llm", "oracle.interrupt.out"]
    mutation = next(s for s in signals if s.type == "oracle.mutation")
    assert (mutation.previous_max, mutation.new_max, mutation.approved_by) == (10, 25, "human")
    assert result.status == "completed"
    assert result.output == 5

    signals, result = await streamed(spending_graph(mutable_cost_governor(60, VirtualClock())))
    error = node_errors(signals)["second"]
    assert error.kind == "denied"
    assert isinstance(error.exception, Denied)
    assert result.status == "failed"


async def test_mutating_the_day_limit_leaves_the_hour_limit_alone() -> None:
    # covers L-19, L-24 (scenario 9)
    def approve(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        assert interrupt.window == "day"
        return MutateDecision(oracle="llm", limit_type="cost", max=20, approver="human")

    governor = Governor(
        oracles={
            "llm": [
                Limit(type="cost", max=10, window="day", extract=cost_of, mutable={"human": True}),
                Limit(type="cost", max=100, window="hour", extract=cost_of),
            ]
        },
        handle_interrupt=approve,
        clock=VirtualClock(),
    )
    graph = spending_graph(governor)

    async def report(inputs: list[Any], ctx: NodeContext) -> dict[str, float]:
        return {v.window: v.max for v in await ctx.counters("llm:claude")}

    graph.add_node("report", report).add_edge("second", "report")
    result = await graph.run()
    assert result.output == {"day": 20, "hour": 100}


async def test_a_custom_window_expires_and_its_mutated_max_resets() -> None:
    # covers L-19, L-24 (scenario 10: 50 ms window, calls max 2)
    clock = VirtualClock(start=0.0)  # 0.05 s past a large epoch float is not exactly 0.05

    def approve(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        return MutateDecision(oracle="api", limit_type="calls", max=3, approver="ops")

    governor = Governor(
        oracles={"api": [Limit(type="calls", max=2, window=0.05, mutable={"ops": True})]},
        handle_interrupt=approve,
        clock=clock,
    )
    graph = Graph("window", governor=governor)

    async def burst(inputs: list[Any], ctx: NodeContext) -> float:
        for _ in range(3):  # the third call is past max 2: mutated to 3
            await ctx.exec("api", fn=lambda: None)
        return (await ctx.counters("api"))[0].max

    async def later(inputs: list[Any], ctx: NodeContext) -> tuple[float, float]:
        clock.advance(0.05)
        await ctx.exec("api", fn=lambda: None)
        view = (await ctx.counters("api"))[0]
        return view.accumulated, view.max

    graph.add_node("burst", burst).add_node("later", later).add_edge("burst", "later")
    result = await graph.run()
    assert result.outputs == {"burst": 3, "later": (1, 2)}


async def test_retries_back_off_on_the_clock_and_exec_in_is_emitted_once() -> None:
    # covers L-17, L-18 (scenario 17: fixed, exponential, custom, none)
    clock = VirtualClock()
    governor = Governor(
        oracles={
            "fixed": [Limit(type="retries", max=2, backoff=0.1)],
            "doubling": [Limit(type="retries", max=2, backoff="exponential")],
            "custom": [Limit(type="retries", max=2, backoff=lambda attempt: 7 * (attempt + 1))],
            "immediate": [Limit(type="retries", max=2)],
        },
        clock=clock,
    )
    graph = Graph("retrying", governor=governor)

    async def flaky_calls(inputs: list[Any], ctx: NodeContext) -> dict[str, list[float]]:
        delays: dict[str, list[float]] = {}
        for key in ("fixed", "doubling", "custom", "immediate"):
            failures = 2
            before = len(clock.sleeps)

            def flaky() -> str:
                nonlocal failures
                failures -= 1
                if failures >= 0:
                    raise ConnectionError("reset")
                return "ok"

            assert await ctx.exec(key, fn=flaky) == "ok"
            delays[key] = clock.sleeps[before:]
        return delays

    graph.add_node("flaky", flaky_calls)
    signals, result = await streamed(graph)
    assert result.output == {
        "fixed": [0.1, 0.1],
        "doubling": [1.0, 2.0],
        "custom": [7, 14],
        "immediate": [],
    }
    exec_in = [s for s in signals if s.type == "oracle.exec.in"]
    assert [s.key for s in exec_in] == ["fixed", "doubling", "custom", "immediate"]
    assert [s.attempts for s in signals if s.type == "oracle.exec.out"] == [3, 3, 3, 3]


async def test_an_action_past_its_timeout_fails_the_node() -> None:
    # covers L-17 (scenario 18)
    governor = Governor(
        oracles={"tool:slow": [Limit(type="timeout", max=10)]}, clock=VirtualClock()
    )
    graph = Graph("slow", governor=governor)

    async def hang() -> None:
        await asyncio.Event().wait()

    async def slow(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("tool:slow", fn=hang)

    graph.add_node("slow", slow)
    signals, result = await streamed(graph)
    error = node_errors(signals)["slow"]
    assert isinstance(error.exception, ActionTimeout)
    assert "after 10 s" in error.error
    assert result.status == "failed"


async def test_a_slow_interrupt_handler_resolves_as_an_error_not_a_hang() -> None:
    # covers L-27, L-29 (scenario 19: interrupt_timeout)
    async def never_answers(interrupt: Interrupt, ctx: InterruptContext) -> RetryDecision:
        await asyncio.Event().wait()
        return RetryDecision()

    governor = Governor(
        oracles={"api": [Limit(type="calls", max=0, mutable={"ops": True})]},
        handle_interrupt=never_answers,
        interrupt_timeout=1,
        clock=VirtualClock(),
    )
    graph = Graph("waiting", governor=governor)

    async def call(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("api", fn=lambda: "never")

    graph.add_node("call", call)
    signals, result = await streamed(graph)
    out = next(s for s in signals if s.type == "oracle.interrupt.out")
    assert out.decision == "error"
    assert node_errors(signals)["call"].kind == "denied"
    assert result.status == "failed"


async def test_a_node_that_asks_for_a_decision_runs_again_on_retry() -> None:
    # covers L-27, L-28 (scenario 20: a tool throws Interrupt, the handler says retry)
    trades: list[str] = []
    asked: list[Any] = []

    def handler(interrupt: Interrupt, ctx: InterruptContext) -> RetryDecision:
        asked.append(interrupt.payload)
        return RetryDecision()

    graph = Graph("trading", governor=Governor(handle_interrupt=handler, clock=VirtualClock()))
    attempts = 0

    def trade(inputs: list[Any]) -> str:
        nonlocal attempts
        attempts += 1
        if attempts == 1:
            raise NodeInterrupt({"confirm": "buy AAPL"})
        trades.append("AAPL")
        return "bought"

    graph.add_node("trade", trade)
    signals, result = await streamed(graph)
    assert trades == ["AAPL"]
    assert asked == [{"confirm": "buy AAPL"}]
    assert result.output == "bought"
    interrupt_out = next(s for s in signals if s.type == "oracle.interrupt.out")
    assert interrupt_out.decision == "retry"


async def test_snapshot_and_restore_carry_counters_into_a_new_governor() -> None:
    # covers L-32 (scenario 22: hierarchical keys continue from the saved values)
    def config() -> dict[str, Any]:
        return {
            "oracles": {
                "llm": [Limit(type="calls", max=3, window="day")],
                "llm:a": [Limit(type="calls", max=5, window="day")],
            },
            "clock": VirtualClock(),
        }

    graph = Graph("calls")

    async def two_calls(inputs: list[Any], ctx: NodeContext) -> str:
        await ctx.exec("llm:a:b", fn=lambda: None)
        await ctx.exec("llm:a:b", fn=lambda: None)
        return "done"

    graph.add_node("two", two_calls)
    first = Governor(**config())
    assert (await graph.run(governor=first)).status == "completed"
    saved = await first.snapshot()
    second = Governor(**config())
    await second.restore(saved)
    result = await graph.run(governor=second)  # the 4th call passes "llm" max 3
    assert isinstance(result.errors["two"], PolicyExceeded)
    views = await second.counters("llm:a:b")
    assert [(v.oracle, v.accumulated) for v in views] == [("llm", 3), ("llm:a", 3)]


async def test_concurrent_executions_have_their_own_invocation_counters() -> None:
    # covers L-19 (scenario 23)
    governor = Governor(
        oracles={"api": [Limit(type="calls", max=1, window="invocation")]}, clock=VirtualClock()
    )
    graph = Graph("isolated", governor=governor)
    inside = 0
    both = asyncio.Event()

    async def call(inputs: list[Any], ctx: NodeContext) -> Any:
        nonlocal inside
        inside += 1
        if inside == 2:
            both.set()
        await both.wait()  # both executions are in flight together
        return await ctx.exec("api", fn=lambda: inputs[0])

    graph.add_node("call", call)
    first, second = await asyncio.gather(graph.run("a"), graph.run("b"))
    assert (first.output, second.output) == ("a", "b")


async def test_exec_runs_the_registered_executor_of_a_parent_key() -> None:
    # covers L-15 (scenario 25)
    governor = Governor(
        oracles={
            "api:market": Oracle(
                policies=[Limit(type="calls", max=1, window="invocation")],
                executor=lambda symbol: f"price of {symbol}",
            )
        },
        clock=VirtualClock(),
    )
    graph = Graph("quotes", governor=governor)

    async def quote(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("api:market:alpaca", inputs[0])

    async def again(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.exec("api:market:alpaca", "MSFT")

    graph.add_node("quote", quote).add_node("again", again).add_edge("quote", "again")
    result = await graph.run("AAPL")
    assert result.outputs == {"quote": "price of AAPL"}
    assert isinstance(result.errors["again"], PolicyExceeded)  # under the oracle's policies
