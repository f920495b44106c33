"""The governor at work: budgets, rate limits, two-phase resolution, interrupts, state."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from bastion.core import Usage, UserError
from bastion.governance import (
    Budget,
    CustomPolicy,
    Denied,
    DeniedSignal,
    DenyDecision,
    ExecOutSignal,
    GovernanceSignal,
    Governor,
    Interrupt,
    InterruptContext,
    InterruptDecision,
    InterruptRequired,
    Limit,
    MutateDecision,
    MutationRefused,
    MutationSignal,
    Oracle,
    PolicyAction,
    PolicyExceeded,
    PolicyResult,
    PolicySignal,
    ResultDecision,
    RetryDecision,
    allow,
    deny,
    interrupt,
    key_ancestry,
)
from bastion.testing import VirtualClock

MODEL = "llm:anthropic:claude-sonnet"


def usage(cost: float) -> Usage:
    return Usage(prompt_tokens=1000, completion_tokens=200, cost_usd=cost)


class Calls:
    """A model-call double: returns a Usage costing ``cost`` and counts its calls."""

    def __init__(self, cost: float) -> None:
        self.cost = cost
        self.count = 0

    async def __call__(self) -> Usage:
        self.count += 1
        return usage(self.cost)


def test_key_ancestry() -> None:
    # covers L-11
    assert key_ancestry(MODEL) == ("llm", "llm:anthropic", MODEL)
    with pytest.raises(UserError, match="Invalid oracle key 'llm::x'"):
        key_ancestry("llm::x")


async def test_daily_budget_interrupt_raise_to_20_retries_and_60_is_refused() -> None:
    # covers L-23, L-24, L-27, L-29
    clock = VirtualClock()
    decisions: list[InterruptDecision] = [
        MutateDecision(oracle="llm", limit_type="cost", max=60),
        MutateDecision(oracle="llm", limit_type="cost", max=20),
    ]
    seen: list[Interrupt] = []

    def approver(it: Interrupt, ctx: InterruptContext) -> InterruptDecision:
        seen.append(it)
        return decisions.pop()

    signals: list[GovernanceSignal] = []
    gov = Governor(
        budget=Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50),
        handle_interrupt=approver,
        clock=clock,
    )
    gov.subscribe(signals.append)
    model = Calls(4.0)
    for _ in range(3):  # $12 spent: the third call was allowed at $8 < $10
        assert (await gov.exec(MODEL, model)).cost_usd == 4.0
    assert model.count == 3
    # Fourth call: $12 >= $10 -> interrupt -> raised to 20 -> the same action retries and runs.
    await gov.exec(MODEL, model)
    assert model.count == 4
    assert seen[0].oracle == "llm"
    assert seen[0].limit_type == "cost"
    assert seen[0].current == 12.0
    assert seen[0].max == 10.0
    assert seen[0].approvers == ("human:cfo",)
    assert [c.max for c in await gov.counters(MODEL)] == [20.0]
    names = [s.name for s in signals]
    tail = names[names.index("oracle.exceeded") :]
    assert tail == [
        "oracle.exceeded",
        "oracle.interrupt.in",
        "oracle.mutation.llm",
        "oracle.interrupt.out",
        "oracle.exec.in",
        "oracle.policy.llm",
        "oracle.exec.out",
    ]
    # $16 -> two more calls reach $24 >= $20: interrupt again, approver now asks for 60.
    await gov.exec(MODEL, model)
    with pytest.raises(MutationRefused, match="to 60 was refused") as refused:
        await gov.exec(MODEL, model)
    assert refused.value.limit_type == "cost"
    assert refused.value.requested == 60
    assert model.count == 5  # the refused action never ran
    rejected = [s for s in signals if isinstance(s, MutationSignal)]
    assert [s.accepted for s in rejected] == [True, False]


async def test_budget_breach_without_handler_suspends_and_resumes_after_decide() -> None:
    # covers L-24, L-32
    clock = VirtualClock()
    gov = Governor(
        budget=Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50),
        clock=clock,
    )
    model = Calls(6.0)
    await gov.exec(MODEL, model)
    await gov.exec(MODEL, model)
    with pytest.raises(InterruptRequired) as raised:
        await gov.exec(MODEL, model)
    it = raised.value.interrupt
    assert model.count == 2
    assert gov.pending() == [it]
    # The suspended state survives JSON and a fresh governor (a new process).
    saved = json.loads(json.dumps(await gov.snapshot()))
    fresh = Governor(
        budget=Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50),
        clock=clock,
    )
    await fresh.restore(saved)
    assert [i.to_dict() for i in fresh.pending()] == [it.to_dict()]
    with pytest.raises(MutationRefused):
        await fresh.decide(
            it.id, {"decision": "mutate", "oracle": "llm", "limit_type": "cost", "max": 60}
        )
    assert fresh.pending() != []  # still waiting after the refusal
    await fresh.decide(it.id, MutateDecision(oracle="llm", limit_type="cost", max=20))
    assert fresh.pending() == []
    await fresh.exec(MODEL, model)  # the same action retries and runs
    assert model.count == 3
    assert [(c.accumulated, c.max, c.original_max) for c in await fresh.counters(MODEL)] == [
        (18.0, 20.0, 10.0)
    ]
    with pytest.raises(UserError, match="No pending interrupt 'nope'"):
        await fresh.decide("nope", RetryDecision())


async def test_decisions_deny_and_result_apply_to_the_retried_action() -> None:
    # covers L-27, L-28
    gov = Governor(
        oracles={"tool:trade": [Limit(type="calls", max=1, mutable={"ops": True})]},
        clock=VirtualClock(),
    )
    assert await gov.exec("tool:trade", lambda: "first") == "first"
    with pytest.raises(InterruptRequired) as raised:
        await gov.exec("tool:trade", lambda: "second")
    await gov.decide(raised.value.interrupt.id, ResultDecision(value="cached"))
    assert await gov.exec("tool:trade", lambda: "never") == "cached"
    with pytest.raises(InterruptRequired) as raised:
        await gov.exec("tool:trade", lambda: "third")
    await gov.decide(raised.value.interrupt.id, DenyDecision(reason="market closed"))
    with pytest.raises(Denied, match="market closed"):
        await gov.exec("tool:trade", lambda: "never")


async def test_non_mutable_limit_fails_before_the_call() -> None:
    # covers L-17, L-28
    gov = Governor(oracles={"llm": [Limit(type="cost", max=1.0)]}, clock=VirtualClock())
    model = Calls(1.5)
    await gov.exec(MODEL, model)
    with pytest.raises(PolicyExceeded) as raised:
        await gov.exec(MODEL, model)
    assert (raised.value.oracle, raised.value.current, raised.value.max) == ("llm", 1.5, 1.0)
    assert model.count == 1


async def test_per_minute_call_limit_slides_with_the_virtual_clock() -> None:
    # covers L-11, L-17, L-19
    clock = VirtualClock()
    gov = Governor(
        oracles={"api:market": [Limit(type="calls", max=2, window="minute")]}, clock=clock
    )
    ran: list[float] = []

    def fetch() -> str:
        ran.append(clock.now())
        return "prices"

    await gov.exec("api:market:alpaca", fetch)  # t=0, inherits the api:market limit
    clock.advance(30)
    await gov.exec("api:market:alpaca", fetch)  # t=30
    with pytest.raises(PolicyExceeded, match="calls 2 of 2"):
        await gov.exec("api:market:alpaca", fetch)
    clock.advance(29.9)  # t=59.9: the t=0 call is still inside the minute
    with pytest.raises(PolicyExceeded):
        await gov.exec("api:market:alpaca", fetch)
    clock.advance(0.1)  # t=60: it has left
    await gov.exec("api:market:alpaca", fetch)
    with pytest.raises(PolicyExceeded):
        await gov.exec("api:market:alpaca", fetch)
    clock.advance(30)  # t=90: the t=30 call has left
    await gov.exec("api:market:alpaca", fetch)
    start = clock.now() - 90
    assert [t - start for t in ran] == [0, 30, 60, 90]


async def test_force_deny_at_global_beats_allow_at_the_oracle() -> None:
    # covers L-20, L-21
    gov = Governor(
        policies=[lambda a: deny("maintenance window", force=True)],
        oracles={MODEL: [lambda a: allow(stop=True)]},
        clock=VirtualClock(),
    )
    with pytest.raises(Denied, match="maintenance window"):
        await gov.exec(MODEL, Calls(0.1))


async def test_deny_at_the_oracle_beats_allow_above_it() -> None:
    # covers L-16, L-21, L-28
    asked: list[str] = []

    def record(level: str, result: PolicyResult) -> CustomPolicy:
        def fn(action: PolicyAction) -> PolicyResult:
            asked.append(level)
            return result

        return CustomPolicy(fn=fn, id=level)

    gov = Governor(
        policies=[record("global", allow(stop=True))],
        node_policies={"researcher": [record("node", allow())]},
        oracles={
            "llm": [record("llm", allow())],
            "llm:anthropic": [record("llm:anthropic", deny("provider blocked"))],
        },
        clock=VirtualClock(),
    )
    model = Calls(0.1)
    with pytest.raises(Denied, match="provider blocked") as raised:
        await gov.exec(MODEL, model, node="researcher")
    assert raised.value.oracle == MODEL
    assert model.count == 0
    # Capture runs top-down over every level, once each.
    assert asked == ["global", "node", "llm", "llm:anthropic"]
    # Another provider is not under that deny: the global allow+stop lets it through.
    assert (await gov.exec("llm:openai:gpt", model, node="researcher")).cost_usd == 0.1


async def test_allow_stop_below_hides_a_deny_above() -> None:
    # covers L-20, L-21
    gov = Governor(
        policies=[lambda a: deny("no tools")],
        oracles={"tool:search": [lambda a: allow(stop=True)]},
        clock=VirtualClock(),
    )
    assert await gov.exec("tool:search", lambda: "hits") == "hits"
    with pytest.raises(Denied, match="no tools"):
        await gov.exec("tool:shell", lambda: "never")


async def test_allow_force_at_the_top_overrides_a_deny_below() -> None:
    # covers L-20, L-21
    gov = Governor(
        policies=[lambda a: allow(force=True) if a.node == "admin" else None],
        oracles={"tool:shell": [lambda a: deny("shell is off")]},
        clock=VirtualClock(),
    )
    assert await gov.exec("tool:shell", lambda: "ok", node="admin") == "ok"
    with pytest.raises(Denied, match="shell is off"):
        await gov.exec("tool:shell", lambda: "never", node="intern")


async def test_time_of_day_policy_denies_outside_hours_with_its_reason() -> None:
    # covers L-26, L-29
    def trading_hours(action: PolicyAction) -> PolicyResult:
        hour = datetime.fromtimestamp(action.timestamp, UTC).hour
        if 9 <= hour < 17:
            return allow()
        return deny(f"outside trading hours (09-17 UTC, now {hour:02d}h)")

    clock = VirtualClock(start=datetime(2025, 3, 3, 8, 30, tzinfo=UTC).timestamp())
    gov = Governor(oracles={"api:market:alpaca": [trading_hours]}, clock=clock)
    denials: list[GovernanceSignal] = []
    gov.subscribe(denials.append)
    with pytest.raises(Denied) as raised:
        await gov.exec("api:market:alpaca", lambda: "order")
    assert raised.value.reason == "outside trading hours (09-17 UTC, now 08h)"
    assert [(s.name, s.reason, s.policy_id) for s in denials if isinstance(s, DeniedSignal)] == [
        ("oracle.denied", "outside trading hours (09-17 UTC, now 08h)", "trading_hours")
    ]
    clock.advance(3600)
    assert await gov.exec("api:market:alpaca", lambda: "order") == "order"


async def test_async_policy_sees_the_action_fields() -> None:
    # covers L-16, L-22
    seen: list[PolicyAction] = []

    async def watch(action: PolicyAction) -> PolicyResult | None:
        seen.append(action)
        return None

    clock = VirtualClock()
    gov = Governor(policies=[watch], clock=clock)
    await gov.exec(
        "tool:search",
        lambda: 1,
        input={"q": "x"},
        node="researcher",
        invocation="run_1",
        ancestry=("root",),
        history=("llm:a",),
    )
    action = seen[0]
    assert (action.node, action.oracle, action.input, action.timestamp) == (
        "researcher",
        "tool:search",
        {"q": "x"},
        clock.now(),
    )
    assert (action.invocation_id, tuple(action.ancestry), tuple(action.history)) == (
        "run_1",
        ("root",),
        ("llm:a",),
    )
    assert action.policy_id == "watch"


async def test_policy_interrupt_with_handler_retry_then_approved() -> None:
    # covers L-20, L-27
    calls: list[Interrupt] = []

    def handler(it: Interrupt, ctx: InterruptContext) -> InterruptDecision:
        calls.append(it)
        return RetryDecision()

    gov = Governor(
        oracles={"tool:wire": [lambda a: interrupt({"amount": a.input})]},
        handle_interrupt=handler,
        clock=VirtualClock(),
    )
    assert await gov.exec("tool:wire", lambda: "sent", input=500) == "sent"
    assert [(i.kind, i.oracle, i.payload) for i in calls] == [
        ("policy", "tool:wire", {"amount": 500})
    ]


async def test_failing_handler_denies() -> None:
    # covers L-27
    def handler(it: Interrupt, ctx: InterruptContext) -> InterruptDecision:
        raise RuntimeError("pager down")

    gov = Governor(
        oracles={"tool:wire": [lambda a: interrupt("approve?")]},
        handle_interrupt=handler,
        clock=VirtualClock(),
    )
    with pytest.raises(Denied, match="pager down"):
        await gov.exec("tool:wire", lambda: "sent")


async def test_snapshot_json_restore_keeps_counters_and_windows() -> None:
    # covers L-19, L-32
    clock = VirtualClock()

    def config() -> Governor:
        return Governor(
            oracles={
                "llm": [Limit(type="calls", max=3, window="hour")],
                "llm:anthropic": [Limit(type="cost", max=5.0, window="day")],
            },
            clock=clock,
        )

    gov = config()
    await gov.exec(MODEL, Calls(1.25))
    clock.advance(600)
    await gov.exec(MODEL, Calls(1.25))
    snap = await gov.snapshot()
    text = json.dumps(snap)
    fresh = config()
    await fresh.restore(json.loads(text))
    views = {(c.oracle, c.type): c for c in await fresh.counters(MODEL)}
    assert views["llm", "calls"].accumulated == 2
    assert views["llm", "calls"].window_start == clock.now() - 600
    assert views["llm:anthropic", "cost"].accumulated == 2.5
    await fresh.exec(MODEL, Calls(1.0))
    with pytest.raises(PolicyExceeded, match="calls 3 of 3"):
        await fresh.exec(MODEL, Calls(1.0))
    clock.advance(3000)  # the first call (t=0) leaves the hour window
    await fresh.exec(MODEL, Calls(1.0))
    with pytest.raises(UserError, match="snapshot version"):
        await fresh.restore({"version": 99})


async def test_mutation_expires_with_its_window() -> None:
    # covers L-19, L-24
    clock = VirtualClock()
    gov = Governor(
        oracles={"tool:x": [Limit(type="calls", max=1, window="minute", mutable={"ops": True})]},
        handle_interrupt=lambda it, ctx: MutateDecision(oracle="tool:x", limit_type="calls", max=2),
        clock=clock,
    )
    await gov.exec("tool:x", lambda: 1)
    await gov.exec("tool:x", lambda: 2)  # interrupt -> max 2 -> runs
    assert [c.max for c in await gov.counters("tool:x")] == [2]
    clock.advance(60)
    assert [(c.max, c.accumulated) for c in await gov.counters("tool:x")] == [(1, 0)]


async def test_two_windows_of_one_type_mutate_the_breached_one() -> None:
    # covers L-19, L-24
    clock = VirtualClock()
    gov = Governor(
        oracles={
            "llm": [
                Limit(type="calls", max=100, window="hour", mutable={"ops": True}),
                Limit(type="calls", max=2, window="day", mutable={"ops": True}),
            ]
        },
        handle_interrupt=lambda it, ctx: MutateDecision(oracle="llm", limit_type="calls", max=3),
        clock=clock,
    )
    for _ in range(3):
        await gov.exec("llm:x", lambda: None)
    assert {c.window: c.max for c in await gov.counters("llm:x")} == {"hour": 100, "day": 3}


async def test_calls_count_failures_and_record_split_api() -> None:
    # covers L-14, L-17
    gov = Governor(
        oracles={"llm": [Limit(type="calls", max=10), Limit(type="context", max=5000)]},
        clock=VirtualClock(),
    )

    def boom() -> None:
        raise ValueError("provider said no")

    with pytest.raises(ValueError, match="provider said no"):
        await gov.exec(MODEL, boom)
    assert await gov.check(MODEL, invocation="run_1") is None
    await gov.record(MODEL, usage=Usage(prompt_tokens=3000, completion_tokens=1000))
    views = {c.type: c.accumulated for c in await gov.counters(MODEL)}
    assert views == {"calls": 2, "context": 4000}
    # A context check knows the prompt size before the call.
    with pytest.raises(PolicyExceeded, match="context 4000 of 5000"):
        await gov.check(MODEL, tokens=1500)


async def test_custom_counter_and_extract_breakdown() -> None:
    # covers L-16, L-17, L-29
    signals: list[GovernanceSignal] = []
    gov = Governor(
        oracles={
            "llm": [
                Limit(
                    type="cost",
                    max=1.0,
                    extract=lambda r: {"prompt": r["in"], "completion": r["out"]},
                ),
                Limit(type="x:images", max=2),
            ]
        },
        clock=VirtualClock(),
    )
    gov.subscribe(signals.append)
    result: dict[str, Any] = {"in": 0.25, "out": 0.5}
    await gov.record(MODEL, result, counters={"x:images": 2})
    policy = [s for s in signals if isinstance(s, PolicySignal)]
    assert [(s.limit_type, s.amount, dict(s.breakdown)) for s in policy] == [
        ("cost", 0.75, {"prompt": 0.25, "completion": 0.5}),
        ("x:images", 2.0, {}),
    ]
    with pytest.raises(PolicyExceeded, match="x:images 2 of 2"):
        await gov.check(MODEL)


async def test_invocation_window_is_per_invocation_and_dropped_at_end() -> None:
    # covers L-19
    gov = Governor(
        oracles={"tool": [Limit(type="calls", max=1, window="invocation")]}, clock=VirtualClock()
    )
    await gov.exec("tool:a", lambda: 1, invocation="run_1")
    await gov.exec("tool:a", lambda: 1, invocation="run_2")
    with pytest.raises(PolicyExceeded):
        await gov.exec("tool:b", lambda: 1, invocation="run_1")
    await gov.end_scope(invocation="run_1")
    await gov.exec("tool:b", lambda: 1, invocation="run_1")


async def test_rounds_limit_allows_exactly_n_tool_rounds() -> None:
    # covers L-17 (rounds), SPEC 4.3: max=N is exactly N tool-call rounds
    gov = Governor(
        oracles={"llm": [Limit(type="rounds", max=2, window="invocation")]}, clock=VirtualClock()
    )
    rounds_run = 0
    model = Calls(0.0)
    failure: PolicyExceeded | None = None
    for _ in range(5):  # a model that always asks for tools
        await gov.exec(MODEL, model, invocation="run")
        try:
            await gov.begin_round(MODEL, invocation="run")
        except PolicyExceeded as exc:
            failure = exc
            break
        rounds_run += 1
    assert rounds_run == 2
    assert model.count == 3
    assert failure is not None
    assert (failure.limit_type, failure.current, failure.max) == ("rounds", 2, 2)


async def test_retries_with_exponential_backoff_on_the_clock() -> None:
    # covers L-17, L-18, L-29
    clock = VirtualClock()
    gov = Governor(
        oracles={"api": [Limit(type="retries", max=3, backoff="exponential")]}, clock=clock
    )
    signals: list[GovernanceSignal] = []
    gov.subscribe(signals.append)
    attempts = 0

    def flaky() -> str:
        nonlocal attempts
        attempts += 1
        if attempts < 4:
            raise ConnectionError("reset")
        return "ok"

    assert await gov.exec("api:x", flaky) == "ok"
    assert clock.sleeps == [1.0, 2.0, 4.0]
    assert [s.name for s in signals] == ["oracle.exec.in", "oracle.exec.out"]
    assert isinstance(signals[1], ExecOutSignal)
    assert signals[1].attempts == 4


async def test_retries_fixed_and_function_backoff_then_give_up() -> None:
    # covers L-17, L-18
    clock = VirtualClock()
    gov = Governor(
        oracles={
            "a": [Limit(type="retries", max=2, backoff=0.5)],
            "b": [Limit(type="retries", max=2, backoff=lambda n: 10 * (n + 1))],
        },
        clock=clock,
    )

    def fail() -> None:
        raise ConnectionError("down")

    with pytest.raises(ConnectionError):
        await gov.exec("a", fail)
    with pytest.raises(ConnectionError):
        await gov.exec("b", fail)
    assert clock.sleeps == [0.5, 0.5, 10, 20]


async def test_timeout_cancels_a_slow_action() -> None:
    # covers L-14, L-17
    import asyncio

    from bastion.governance import ActionTimeout

    clock = VirtualClock(auto_advance=False)
    gov = Governor(oracles={"tool:slow": [Limit(type="timeout", max=10)]}, clock=clock)

    async def slow() -> str:
        await clock.sleep(30)
        return "late"

    async def quick() -> str:
        await clock.sleep(5)
        return "fast"

    task = asyncio.ensure_future(gov.exec("tool:slow", slow))
    await clock.wait_for_sleepers(2)  # the action and its 10 s deadline
    clock.advance(10)
    with pytest.raises(ActionTimeout, match="after 10 s"):
        await task
    task = asyncio.ensure_future(gov.exec("tool:slow", quick))
    await clock.wait_for_sleepers(2)
    clock.advance(5)
    assert await task == "fast"


async def test_executor_inherited_from_a_parent_key() -> None:
    # covers L-10, L-11, L-15
    gov = Governor(
        oracles={"api:market": Oracle(executor=lambda symbol: f"price of {symbol}")},
        clock=VirtualClock(),
    )
    assert await gov.exec("api:market:alpaca", input="AAPL") == "price of AAPL"
    with pytest.raises(UserError, match="no executor registered for 'tool:x'"):
        await gov.exec("tool:x")


def test_configuration_errors_are_user_errors() -> None:
    with pytest.raises(UserError, match="Unknown limit type 'tokens'"):
        Limit(type="tokens", max=1)
    with pytest.raises(UserError, match="Limits belong to oracles"):
        Governor(policies=[Limit(type="calls", max=1)])
    with pytest.raises(UserError, match="two 'calls' limits"):
        Governor(oracles={"llm": [Limit(type="calls", max=1), Limit(type="calls", max=2)]})
    with pytest.raises(UserError, match="needs mutable_by"):
        Budget(cost_usd=1, ceiling=5).limit()


def test_budget_is_a_cost_limit_on_llm() -> None:
    # covers L-23
    limit = Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50).limit()
    assert (limit.type, limit.max, limit.window) == ("cost", 10, "day")
    assert limit.mutable is not None
    rule = limit.mutable["human:cfo"]
    assert callable(rule)
    assert rule(50, 12, 10)
    assert not rule(50.01, 12, 10)


async def test_no_signal_objects_without_subscribers(monkeypatch: pytest.MonkeyPatch) -> None:
    import bastion.governance._bus as bus
    import bastion.governance._exec as module
    import bastion.governance._resolve as resolve

    def explode(*args: object, **kwargs: object) -> None:
        raise AssertionError("a signal was built with nobody listening")

    for name in ("ExecInSignal", "ExecOutSignal"):
        monkeypatch.setattr(module, name, explode)
    for name in ("DeniedSignal", "ExceededSignal"):
        monkeypatch.setattr(resolve, name, explode)
    monkeypatch.setattr(bus, "PolicySignal", explode)
    gov = Governor(
        oracles={"llm": [Limit(type="calls", max=1)]},
        policies=[lambda a: None],
        clock=VirtualClock(),
    )
    await gov.exec(MODEL, Calls(0.0))
    with pytest.raises(PolicyExceeded):
        await gov.exec(MODEL, Calls(0.0))
