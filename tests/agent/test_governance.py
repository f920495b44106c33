"""Governance through the agent: budgets, rate limits, policies, interrupts (SPEC L, A-22).

Every scenario runs an Agent on a ScriptedModel and a VirtualClock and asserts what a user
sees: the run's status and output, the tool results the model reads, the event stream.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any, Literal

import pytest

from bastion import Agent, tool
from bastion.agent import GovernanceOptions, ToolOptions, run_state_from_json, run_state_to_json
from bastion.core import AgentEvent, GovernanceEvent, RunContext, ToolMessage, Usage, UserError
from bastion.governance import (
    Budget,
    CounterView,
    Governor,
    Interrupt,
    InterruptContext,
    Limit,
    MutateDecision,
    PolicyAction,
    PolicyResult,
    ResultDecision,
    RetryDecision,
    allow,
    deny,
)
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import Directive, InterruptResolution, Tool

CFO = "human:cfo"


def daily_budget() -> Budget:
    return Budget(cost_usd=10, window="day", mutable_by=CFO, ceiling=50)


def costly(*costs: float) -> list[Turn | str]:
    """Tool-call turns costing ``costs`` dollars each, then an answer costing $1."""
    turns: list[Turn | str] = [
        Turn(tool_calls=[Call("lookup", {"q": f"q{i}"}, id=f"c{i}")], usage=Usage(cost_usd=c))
        for i, c in enumerate(costs, 1)
    ]
    turns.append(Turn(text="done", usage=Usage(cost_usd=1)))
    return turns


def lookup_tool(log: list[str]) -> Tool:
    @tool(side_effect_class="read_only")
    def lookup(q: str) -> str:
        """Look something up."""
        log.append(q)
        return f"found {q}"

    return lookup


def governance(events: Sequence[AgentEvent]) -> list[str]:
    """The governance signals of a run, one line each: signal and action key."""
    return [f"{e.signal} {e.data.get('key', '')}" for e in events if isinstance(e, GovernanceEvent)]


def tool_results(messages: Sequence[Any]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


async def counters(agent: Agent[Any, Any], key: str) -> list[CounterView]:
    assert agent.config.governance is not None
    return await agent.config.governance.governor.counters(key)


# -- a daily cost limit of $10, raisable by the CFO up to $50 --------------------------------


@pytest.mark.parametrize(
    ("events", "expected"),
    [
        (
            "decisions",  # the default: what a human would want to see in a UI
            [
                "oracle.exceeded",
                "oracle.interrupt.in",
                "oracle.mutation.llm",
                "oracle.interrupt.out",
            ],
        ),
        ("none", []),
    ],
)
async def test_the_stream_carries_governance_decisions_by_default(
    events: Literal["decisions", "none"], expected: list[str]
) -> None:
    # covers L-29, L-30, L-34 (signals to subscribers; decisions on the stream)
    def approver(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        return MutateDecision(oracle="llm", limit_type="cost", max=20, approver=CFO)

    agent = Agent(
        "analyst",
        model=ScriptedModel(costly(6, 6)),
        tools=[lookup_tool([])],
        budget=daily_budget(),
        governance=GovernanceOptions(handle_interrupt=approver, events=events),
        clock=VirtualClock(),
    )
    observed: list[str] = []
    assert agent.config.governance is not None
    agent.config.governance.governor.subscribe(lambda signal: observed.append(signal.name))
    streamed = [e async for e in agent.stream("research")]
    assert streamed[-1].type == "agent.end"
    assert streamed[-1].status == "completed"
    assert [line.split()[0] for line in governance(streamed)] == expected
    # An observer of the governor still sees every signal, routine ones included.
    assert observed.count("oracle.policy.llm") == 3
    assert "oracle.exceeded" in observed


def test_an_unknown_governance_events_option_is_a_user_error() -> None:
    with pytest.raises(UserError, match=r"governance\.events must be one of"):
        Agent(
            "a",
            model=ScriptedModel(["x"]),
            budget=daily_budget(),
            governance=GovernanceOptions(events="some"),  # type: ignore[arg-type]
        )


def _allow_all(action: PolicyAction) -> PolicyResult:
    return allow()


@pytest.mark.parametrize(
    ("given", "options"),
    [
        ({"policies": [_allow_all]}, GovernanceOptions()),
        ({"budget": Budget(cost_usd=1, window="day")}, GovernanceOptions()),
        ({}, GovernanceOptions(oracles={"llm": [_allow_all]})),
        ({}, GovernanceOptions(handle_interrupt=lambda it, ctx: RetryDecision())),
    ],
)
def test_a_shared_governor_with_the_agents_own_governance_is_a_user_error(
    given: dict[str, Any], options: GovernanceOptions
) -> None:
    shared = GovernanceOptions(
        governor=Governor(),
        oracles=options.oracles,
        handle_interrupt=options.handle_interrupt,
    )
    with pytest.raises(UserError, match=r"governance\.governor is exclusive with policies"):
        Agent("a", model=ScriptedModel(["x"]), governance=shared, **given)


def test_governance_given_as_anything_but_governance_options_is_a_user_error() -> None:
    with pytest.raises(UserError, match="governance must be a GovernanceOptions"):
        Agent("a", model=ScriptedModel(["x"]), governance={"oracles": {}})  # type: ignore[arg-type]


async def test_a_shared_governor_counts_the_calls_of_every_agent_given_it() -> None:
    shared = Governor(oracles={"llm": [Limit(type="calls", max=1, window="day")]})
    options = GovernanceOptions(governor=shared)
    first = Agent("first", model=ScriptedModel(["one"]), governance=options)
    second = Agent("second", model=ScriptedModel(["two"]), governance=options)
    assert (await first.run("a")).output == "one"
    refused = await second.run("b")
    assert (refused.status, refused.output) == ("failed", None)
    assert refused.error is not None
    assert refused.error.code == "budget_exceeded"


async def test_daily_budget_interrupt_raise_to_20_retries_the_same_call_and_completes() -> None:
    # covers L-10, L-23, L-24, L-27, L-29
    asked: list[Interrupt] = []

    def approver(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        asked.append(interrupt)
        return MutateDecision(oracle="llm", limit_type="cost", max=20, approver=CFO)

    log: list[str] = []
    model = ScriptedModel(costly(6, 6))
    agent = Agent(
        "analyst",
        model=model,
        tools=[lookup_tool(log)],
        budget=daily_budget(),
        governance=GovernanceOptions(handle_interrupt=approver, events="all"),
        clock=VirtualClock(),
    )
    events = [e async for e in agent.stream("research")]
    result = events[-1]
    assert result.type == "agent.end"
    assert result.status == "completed"
    assert result.output == "done"
    assert log == ["q1", "q2"]
    # $12 spent of $10 when the third call was checked: nothing was sent before the decision.
    assert [(i.oracle, i.limit_type, i.current, i.max, i.approvers) for i in asked] == [
        ("llm", "cost", 12.0, 10.0, (CFO,))
    ]
    key = "llm:test:scripted"
    assert governance(events) == [
        f"oracle.policy.llm {key}",  # $6
        f"oracle.policy.llm {key}",  # $6
        f"oracle.exceeded {key}",  # $12 of $10: the third call is held
        f"oracle.interrupt.in {key}",
        f"oracle.mutation.llm {key}",  # the CFO raised it to $20
        f"oracle.interrupt.out {key}",
        f"oracle.policy.llm {key}",  # the same call, retried and run: $1
    ]
    mutation = next(
        e for e in events if isinstance(e, GovernanceEvent) and e.signal == "oracle.mutation.llm"
    )
    assert mutation.data["previous_max"] == 10
    assert mutation.data["new_max"] == 20
    assert mutation.data["accepted"] is True
    [counter] = await counters(agent, "llm:test:scripted")
    assert (counter.accumulated, counter.max, counter.original_max) == (13.0, 20.0, 10.0)


async def test_daily_budget_raise_to_60_is_refused_and_the_call_is_never_made() -> None:
    # covers L-23, L-24
    def greedy(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        return MutateDecision(oracle="llm", limit_type="cost", max=60, approver=CFO)

    model = ScriptedModel(costly(6, 6))
    agent = Agent(
        "analyst",
        model=model,
        tools=[lookup_tool([])],
        budget=daily_budget(),
        governance=GovernanceOptions(handle_interrupt=greedy),
        clock=VirtualClock(),
    )
    events = [e async for e in agent.stream("research")]
    result = await agent.run("again")  # the day's budget is still spent
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "policy_denied"
    assert "Raising cost on 'llm' to 60 was refused" in result.error.message
    first_end = events[-1]
    assert first_end.type == "agent.end"
    assert first_end.status == "failed"
    refused = [
        e.data
        for e in events
        if isinstance(e, GovernanceEvent) and e.signal == "oracle.mutation.llm"
    ]
    assert [(d["accepted"], d["new_max"]) for d in refused] == [(False, 10.0)]
    assert result.steps == 1  # the second run's first call was refused before sending


# -- a per-minute call limit resets as the virtual clock passes the window -----------------


async def test_per_minute_call_limit_rate_limits_then_resets_with_the_clock() -> None:
    # covers L-10, L-17, L-19
    clock = VirtualClock()
    log: list[str] = []
    three = [Call("lookup", {"q": f"q{i}"}, id=f"c{i}") for i in (1, 2, 3)]
    model = ScriptedModel(
        [
            Turn(tool_calls=three),
            "two of three",
            Turn(tool_calls=[Call("lookup", {"q": "q4"})]),
            "ok",
        ]
    )
    agent = Agent(
        "researcher",
        model=model,
        tools=[lookup_tool(log)],
        governance=GovernanceOptions(
            oracles={"tool:lookup": [Limit(type="calls", max=2, window="minute")]}
        ),
        clock=clock,
        tool_options=ToolOptions(max_parallel=1),
    )
    first = await agent.run("look up three things")
    assert first.status == "completed"
    assert log == ["q1", "q2"]
    assert [(r.name, r.error_kind) for r in first.tool_calls] == [
        ("lookup", None),
        ("lookup", None),
        ("lookup", "rate_limited"),
    ]
    assert tool_results(first.messages)[2] == (
        "Not run: Limit exceeded on 'tool:lookup': calls 2 of 2 (window minute). Try again later."
    )
    clock.advance(59)
    still = await counters(agent, "tool:lookup")
    assert still[0].accumulated == 2
    clock.advance(1)  # both calls are now exactly a minute old
    second = await agent.run("one more")
    assert second.status == "completed"
    assert log == ["q1", "q2", "q4"]
    assert tool_results(second.messages) == ["found q4"]


# -- two-phase resolution through the agent ------------------------------------------------


def transfer_agent(ledger: list[str], **governance_config: Any) -> Agent[Any, Any]:
    @tool(side_effect_class="read_only")
    def transfer(to: str, amount: int) -> str:
        """Send money."""
        ledger.append(f"{to}:{amount}")
        return "sent"

    model = ScriptedModel(
        [Turn(tool_calls=[Call("transfer", {"to": "bob", "amount": 5}, id="t1")]), "noted"]
    )
    return Agent("bank", model=model, tools=[transfer], clock=VirtualClock(), **governance_config)


async def test_a_forced_global_deny_beats_an_allow_at_the_oracle() -> None:
    # covers L-16, L-20, L-21, C4
    def freeze(action: PolicyAction) -> PolicyResult | None:
        if action.oracle.startswith("tool:"):
            return deny("all tools are frozen for the audit", force=True)
        return None

    def always(action: PolicyAction) -> PolicyResult:
        return allow(stop=True)

    ledger: list[str] = []
    agent = transfer_agent(
        ledger,
        policies=[freeze],
        governance=GovernanceOptions(oracles={"tool:transfer": [always]}),
    )
    events = [e async for e in agent.stream("pay bob")]
    end = events[-1]
    assert end.type == "agent.end"
    assert end.status == "completed"
    assert ledger == []
    errors = [e for e in events if e.type == "tool.execute.error"]
    assert [(e.kind, e.message) for e in errors] == [
        ("approval_denied", "Denied by policy: all tools are frozen for the audit")
    ]
    denied = [e.data for e in events if isinstance(e, GovernanceEvent)]
    assert [(d["key"], d["reason"], d["forced"]) for d in denied if "forced" in d] == [
        ("tool:transfer", "all tools are frozen for the audit", True)
    ]


async def test_a_deny_at_the_oracle_beats_an_allow_above_it() -> None:
    # covers L-21, C4
    def welcome(action: PolicyAction) -> PolicyResult:
        return allow()

    def needs_ticket(action: PolicyAction) -> PolicyResult:
        return deny("transfers need a ticket number")

    ledger: list[str] = []
    agent = transfer_agent(
        ledger,
        policies=[welcome],
        governance=GovernanceOptions(oracles={"tool": [welcome], "tool:transfer": [needs_ticket]}),
    )
    result = await agent.run("pay bob")
    assert result.status == "completed"
    assert ledger == []
    assert tool_results(result.messages) == ["Denied by policy: transfers need a ticket number"]
    assert result.tool_calls[0].error_kind == "approval_denied"


# -- a suspended interrupt survives JSON and a new Agent instance --------------------------


def suspended_agent(script: list[Turn | str], log: list[str]) -> Agent[Any, Any]:
    return Agent(
        "analyst",
        model=ScriptedModel(script),
        tools=[lookup_tool(log)],
        budget=daily_budget(),
        clock=VirtualClock(),
    )


async def _suspend(log: list[str]) -> Any:
    first = suspended_agent(costly(6, 6)[:2], log)
    return await first.run("research")


async def test_suspended_interrupt_json_round_trip_new_agent_counters_restored() -> None:
    # covers L-24, L-27, L-32
    log: list[str] = []
    suspended = await _suspend(log)
    assert suspended.status == "awaiting_approval"
    assert log == ["q1", "q2"]
    state = suspended.state
    assert state is not None
    [interrupt] = state.interrupts
    assert (interrupt.on, interrupt.interrupt.oracle, interrupt.interrupt.limit_type) == (
        "model",
        "llm",
        "cost",
    )
    limit = interrupt.interrupt
    assert (limit.current, limit.max, limit.approvers) == (12.0, 10.0, (CFO,))
    assert state.step == 2  # the third model call was never made
    text = run_state_to_json(state)

    # Another process: a new Agent instance, a new governor, the state from JSON.
    loaded = run_state_from_json(text)
    later = suspended_agent([Turn(text="done", usage=Usage(cost_usd=1))], log)
    refused = await later.run(
        loaded,
        directive=Directive(
            interrupts=[
                InterruptResolution(
                    interrupt_id=interrupt.id,
                    decision=MutateDecision(oracle="llm", limit_type="cost", max=60, approver=CFO),
                )
            ]
        ),
    )
    assert refused.status == "awaiting_approval"  # 60 > 50: refused, still waiting
    assert refused.state is not None
    assert [i.id for i in refused.state.interrupts] == [interrupt.id]
    [counter] = await counters(later, "llm")
    assert (counter.accumulated, counter.max) == (12.0, 10.0)  # restored from the snapshot

    resumed = await later.run(
        run_state_from_json(run_state_to_json(refused.state)),
        directive=Directive(
            interrupts=[
                InterruptResolution(
                    interrupt_id=interrupt.id,
                    decision={
                        "decision": "mutate",
                        "oracle": "llm",
                        "limit_type": "cost",
                        "max": 20,
                        "approver": CFO,
                    },
                )
            ]
        ),
    )
    assert resumed.status == "completed"
    assert resumed.output == "done"
    assert resumed.steps == 3
    [counter] = await counters(later, "llm")
    assert (counter.accumulated, counter.max, counter.original_max) == (13.0, 20.0, 10.0)
    assert log == ["q1", "q2"]


# -- a custom time-of-day policy -----------------------------------------------------------


def business_hours(action: PolicyAction) -> PolicyResult | None:
    hour = datetime.fromtimestamp(action.timestamp, UTC).hour
    if not 9 <= hour < 17:
        return deny(f"trading is closed at {hour:02d}:00 UTC; open 09:00-17:00 UTC")
    return None


async def test_time_of_day_policy_reason_reaches_the_model_for_a_tool_call() -> None:
    # covers L-26
    clock = VirtualClock(datetime(2024, 3, 4, 20, 0, tzinfo=UTC).timestamp())
    log: list[str] = []
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("lookup", {"q": "AAPL"})]),
            "closed",
            Turn(tool_calls=[Call("lookup", {"q": "MSFT"})]),
            "ok",
        ]
    )
    agent = Agent(
        "trader",
        model=model,
        tools=[lookup_tool(log)],
        governance=GovernanceOptions(oracles={"tool:lookup": [business_hours]}),
        clock=clock,
    )
    night = await agent.run("price AAPL")
    assert log == []
    assert tool_results(night.messages) == [
        "Denied by policy: trading is closed at 20:00 UTC; open 09:00-17:00 UTC"
    ]
    clock.advance(14 * 3600)  # 10:00 the next day
    day = await agent.run("price MSFT")
    assert log == ["MSFT"]
    assert tool_results(day.messages) == ["found MSFT"]


async def test_time_of_day_policy_on_model_calls_fails_the_run_with_its_reason() -> None:
    # covers L-26, L-29
    clock = VirtualClock(datetime(2024, 3, 4, 6, 0, tzinfo=UTC).timestamp())
    model = ScriptedModel(["never sent"])
    agent = Agent(
        "trader",
        model=model,
        governance=GovernanceOptions(oracles={"llm": [business_hours]}),
        clock=clock,
    )
    events = [e async for e in agent.stream("hello")]
    assert [e.type for e in events] == [
        "agent.start",
        "step.start",
        "governance.signal",
        "agent.error",
        "agent.end",
    ]
    denied = events[2]
    assert isinstance(denied, GovernanceEvent)
    assert denied.signal == "oracle.denied"
    assert denied.data["key"] == "llm:test:scripted"
    error = events[3]
    assert error.type == "agent.error"
    assert error.code == "policy_denied"
    assert error.message == (
        "llm:test:scripted: trading is closed at 06:00 UTC; open 09:00-17:00 UTC"
    )


# -- LoopHooks' auto-stop as a policy, rounds, substitutes ---------------------------------


async def test_a_run_budget_fails_with_budget_exceeded_before_the_next_model_call() -> None:
    # SPEC §3.1 scenario 24: the step crossing the ceiling completes; the next call is not made.
    # covers L-16, L-19
    log: list[str] = []
    model = ScriptedModel(costly(0.7, 0.7, 0.7))
    agent = Agent(
        "analyst",
        model=model,
        tools=[lookup_tool(log)],
        budget=Budget(cost_usd=1, window="invocation"),
        clock=VirtualClock(),
    )
    result = await agent.run("research")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "budget_exceeded"
    assert "Usage so far: 2 model calls" in result.error.message
    assert "$1.4000" in result.error.message
    assert log == ["q1", "q2"]  # $1.40 spent after two calls: the third is not made
    assert len(model.requests) == 2
    assert result.usage.cost_usd is not None
    assert round(result.usage.cost_usd, 2) == 1.4
    # A new run has its own budget: invocation counters end with their run.
    [counter] = await counters(agent, "llm")
    assert (counter.window, counter.accumulated) == ("invocation", 0.0)


async def test_a_cost_budget_on_a_model_with_no_price_fails_with_budget_unpriced() -> None:
    # SPEC §3.1 scenario 24: an unpriced model cannot be held to a cost budget.
    # covers L-16
    log: list[str] = []
    model = ScriptedModel(
        [Turn(tool_calls=[Call("lookup", {"q": "q1"})], usage=Usage(prompt_tokens=900)), "done"]
    )
    agent = Agent(
        "analyst",
        model=model,
        tools=[lookup_tool(log)],
        budget=Budget(cost_usd=5, window="day"),
        clock=VirtualClock(),
    )
    result = await agent.run("research")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "budget_unpriced"
    assert "unpriced='allow'" in result.error.message
    assert log == []  # the unpriced answer's tool calls never ran
    assert result.usage.prompt_tokens == 900  # what it spent is still reported

    allowed = Agent(
        "analyst",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("lookup", {"q": "q1"})], usage=Usage(prompt_tokens=900)), "ok"]
        ),
        tools=[lookup_tool(log)],
        budget=Budget(cost_usd=5, window="day", unpriced="allow"),
        clock=VirtualClock(),
    )
    assert (await allowed.run("research")).status == "completed"
    assert log == ["q1"]


def test_unpriced_must_be_fail_or_allow() -> None:
    with pytest.raises(UserError, match="unpriced must be 'fail' or 'allow'"):
        Limit(type="cost", max=1, unpriced="ignore")  # pyright: ignore[reportArgumentType]


async def test_rounds_limit_allows_exactly_n_tool_rounds() -> None:
    # covers L-17, C3
    log: list[str] = []
    agent = Agent(
        "looper",
        model=ScriptedModel(costly(0, 0, 0, 0)),
        tools=[lookup_tool(log)],
        governance=GovernanceOptions(
            oracles={"llm": [Limit(type="rounds", max=2, window="invocation")]}
        ),
        clock=VirtualClock(),
    )
    result = await agent.run("loop")
    assert log == ["q1", "q2"]
    assert result.status == "stopped"
    assert result.stop_reason == "budget"
    # The third round's call got a result, so the transcript stays well formed.
    assert tool_results(result.messages)[-1] == (
        "Not run: Limit exceeded on 'llm': rounds 2 of 2 (window invocation)."
    )


async def test_a_result_decision_answers_the_model_call_without_sending_it() -> None:
    # covers L-27
    def cached(interrupt: Interrupt, ctx: InterruptContext) -> ResultDecision:
        return ResultDecision("from the cache")

    model = ScriptedModel(costly(12))
    agent = Agent(
        "analyst",
        model=model,
        tools=[lookup_tool([])],
        budget=daily_budget(),
        governance=GovernanceOptions(handle_interrupt=cached),
        clock=VirtualClock(),
    )
    result = await agent.run("research")
    assert result.status == "completed"
    assert result.output == "from the cache"


async def test_no_governance_configured_means_no_governor_and_no_events() -> None:
    agent = Agent("plain", model=ScriptedModel(["hi"]), clock=VirtualClock())
    assert agent.config.governance is None
    assert agent.config.executor.gate.governor is None
    events = [e async for e in agent.stream("hello")]
    assert not [e for e in events if isinstance(e, GovernanceEvent)]


# -- a resumed tool call that hits the same limit again suspends again ---------------------


async def test_a_retried_tool_call_that_is_still_over_its_limit_suspends_again() -> None:
    # covers L-24, L-27
    log: list[str] = []
    ops = "human:ops"
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("lookup", {"q": "q1"}, id="c1"),
                    Call("lookup", {"q": "q2"}, id="c2"),
                ]
            ),
            "both found",
        ]
    )
    agent = Agent(
        "researcher",
        model=model,
        tools=[lookup_tool(log)],
        governance=GovernanceOptions(
            oracles={
                "tool:lookup": [Limit(type="calls", max=1, window="minute", mutable={ops: True})]
            }
        ),
        clock=VirtualClock(),
        tool_options=ToolOptions(max_parallel=1),
    )
    first = await agent.run("look up two things")
    assert first.status == "awaiting_approval"
    assert log == ["q1"]
    assert first.state is not None
    [held] = first.state.interrupts
    assert (held.on, held.tool_call_ids, held.interrupt.current, held.interrupt.max) == (
        "tool",
        ("c2",),
        1.0,
        1.0,
    )

    # A plain retry: the limit is still used up, so the call is held again, by a new interrupt.
    retried = await agent.run(
        run_state_from_json(run_state_to_json(first.state)),
        directive=Directive(
            interrupts=[InterruptResolution(interrupt_id=held.id, decision=RetryDecision())]
        ),
    )
    assert retried.status == "awaiting_approval"
    assert log == ["q1"]
    assert retried.state is not None
    [again] = retried.state.interrupts
    assert again.id != held.id
    assert (again.on, again.tool_call_ids, again.interrupt.limit_type) == ("tool", ("c2",), "calls")
    assert [p.call.id for p in retried.state.pending_approvals] == ["c2"]
    assert retried.state.suspended is not None
    assert [c.id for c in retried.state.suspended.calls] == ["c1", "c2"]
    assert tool_results(retried.messages) == []  # the step's results wait for c2

    # Raising the limit releases it: the step completes in call order and the run goes on.
    done = await agent.run(
        run_state_from_json(run_state_to_json(retried.state)),
        directive=Directive(
            interrupts=[
                InterruptResolution(
                    interrupt_id=again.id,
                    decision=MutateDecision(
                        oracle="tool:lookup", limit_type="calls", max=2, approver=ops
                    ),
                )
            ]
        ),
    )
    assert done.status == "completed"
    assert done.output == "both found"
    assert log == ["q1", "q2"]
    assert tool_results(done.messages) == ["found q1", "found q2"]
    assert [(r.id, r.error_kind) for r in done.tool_calls] == [("c1", None), ("c2", None)]


async def test_a_retried_round_that_is_still_over_its_limit_suspends_again() -> None:
    # covers L-17, L-24, L-27
    log: list[str] = []
    ops = "human:ops"
    agent = Agent(
        "looper",
        model=ScriptedModel(costly(0, 0)),
        tools=[lookup_tool(log)],
        governance=GovernanceOptions(
            oracles={"llm": [Limit(type="rounds", max=1, window="invocation", mutable={ops: True})]}
        ),
        clock=VirtualClock(),
    )
    first = await agent.run("loop")
    assert first.status == "awaiting_approval"
    assert log == ["q1"]
    assert first.state is not None
    [held] = first.state.interrupts
    assert (held.on, held.tool_call_ids, held.interrupt.limit_type) == ("round", ("c2",), "rounds")

    retried = await agent.run(
        run_state_from_json(run_state_to_json(first.state)),
        directive=Directive(
            interrupts=[InterruptResolution(interrupt_id=held.id, decision=RetryDecision())]
        ),
    )
    assert retried.status == "awaiting_approval"
    assert log == ["q1"]
    assert retried.state is not None
    [again] = retried.state.interrupts
    assert again.id != held.id
    assert (again.on, again.tool_call_ids, again.interrupt.current) == ("round", ("c2",), 1.0)

    done = await agent.run(
        run_state_from_json(run_state_to_json(retried.state)),
        directive=Directive(
            interrupts=[
                InterruptResolution(
                    interrupt_id=again.id,
                    decision=MutateDecision(oracle="llm", limit_type="rounds", max=2, approver=ops),
                )
            ]
        ),
    )
    assert done.status == "completed"
    assert done.output == "done"
    assert log == ["q1", "q2"]
    assert tool_results(done.messages) == ["found q1", "found q2"]


# -- ctx.call: user oracle keys govern arbitrary work inside tools -------------------------


def quote_tool(fetched: list[str]) -> Tool:
    def fetch(symbol: str, *, venue: str) -> str:
        fetched.append(symbol)
        return f"{symbol}@{venue}=101.5"

    @tool(side_effect_class="read_only")
    async def quote(ctx: RunContext[None], symbol: str) -> str:
        """Quote a symbol."""
        return await ctx.call("api:market:alpaca", fetch, symbol, venue="alpaca")

    return quote


def quote_turns(*symbols: str) -> Turn:
    return Turn(tool_calls=[Call("quote", {"symbol": s}, id=f"q_{s}") for s in symbols])


async def test_ctx_call_is_rate_limited_by_a_user_oracle_and_resets_with_the_clock() -> None:
    # covers L-14, L-17, L-19, L-29
    clock = VirtualClock()
    fetched: list[str] = []
    agent = Agent(
        "trader",
        model=ScriptedModel(
            [quote_turns("AAPL", "MSFT", "NVDA"), "two quotes", quote_turns("TSLA"), "one"]
        ),
        tools=[quote_tool(fetched)],
        governance=GovernanceOptions(
            oracles={"api:market:alpaca": [Limit(type="calls", max=2, window="minute")]},
            events="all",
        ),
        clock=clock,
        tool_options=ToolOptions(max_parallel=1),
    )
    stream = agent.stream("quote three")
    events = [e async for e in stream]
    first = stream.result
    assert first.status == "completed"
    assert fetched == ["AAPL", "MSFT"]
    assert tool_results(first.messages) == [
        "AAPL@alpaca=101.5",
        "MSFT@alpaca=101.5",
        "Tool 'quote' failed: PolicyExceeded: Limit exceeded on 'api:market:alpaca': "
        "calls 2 of 2 (window minute).",
    ]
    key = "api:market:alpaca"
    assert [s for s in governance(events) if s.endswith(key)] == [
        f"oracle.exec.in {key}",
        f"oracle.policy.api:market:alpaca {key}",
        f"oracle.exec.out {key}",
        f"oracle.exec.in {key}",
        f"oracle.policy.api:market:alpaca {key}",
        f"oracle.exec.out {key}",
        f"oracle.exceeded {key}",  # the third call: nothing was fetched
    ]
    clock.advance(60)  # the window has passed
    second = await agent.run("one more")
    assert second.status == "completed"
    assert fetched == ["AAPL", "MSFT", "TSLA"]
    assert tool_results(second.messages) == ["TSLA@alpaca=101.5"]


async def test_ctx_call_inherits_a_deny_from_an_ancestor_key() -> None:
    # covers L-11, L-14
    fetched: list[str] = []

    def closed(action: PolicyAction) -> PolicyResult:
        return deny(f"{action.oracle} is closed for maintenance")

    agent = Agent(
        "trader",
        model=ScriptedModel([quote_turns("AAPL"), "no quote"]),
        tools=[quote_tool(fetched)],
        governance=GovernanceOptions(oracles={"api:market": [closed]}),
        clock=VirtualClock(),
    )
    result = await agent.run("quote")
    assert result.status == "completed"
    assert fetched == []
    assert tool_results(result.messages) == [
        "Tool 'quote' failed: Denied: Denied 'api:market:alpaca': "
        "api:market:alpaca is closed for maintenance"
    ]
    assert result.tool_calls[0].is_error


async def test_ctx_call_without_governance_just_runs_sync_and_async_work() -> None:
    fetched: list[str] = []

    async def fetch_async(symbol: str) -> str:
        fetched.append(f"async {symbol}")
        return symbol.lower()

    @tool(side_effect_class="read_only")
    async def both(ctx: RunContext[None], symbol: str) -> str:
        """Fetch twice."""
        first = await ctx.call("api:market:alpaca", fetch_async, symbol)
        second = await ctx.call("api:market:alpaca", lambda: f"sync {symbol}")
        return f"{first}|{second}"

    agent = Agent(
        "plain",
        model=ScriptedModel([Turn(tool_calls=[Call("both", {"symbol": "AAPL"})]), "ok"]),
        tools=[both],
        clock=VirtualClock(),
    )
    assert agent.config.governance is None
    result = await agent.run("go")
    assert tool_results(result.messages) == ["aapl|sync AAPL"]
    assert fetched == ["async AAPL"]
