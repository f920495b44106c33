"""The governor's parts on their own: the counter book, the interrupt desk, the action scope."""

from __future__ import annotations

import dataclasses

import pytest

from bastion.core import UserError
from bastion.governance import (
    ActionScope,
    Denied,
    DenyDecision,
    GovernanceSignal,
    Interrupt,
    InterruptContext,
    InterruptHandler,
    InterruptRequired,
    Limit,
    MemoryLimitCounters,
    MutateDecision,
    MutationRefused,
    ResultDecision,
    RetryDecision,
    Substitute,
)
from bastion.governance._bus import SignalBus
from bastion.governance._counters import CounterBook, Mutation, counter_key
from bastion.governance._desk import InterruptDesk
from bastion.governance._governor import Governor
from bastion.governance._plan import BoundLimit
from bastion.testing import VirtualClock


def _bound(oracle: str, limit: Limit) -> BoundLimit:
    return BoundLimit(
        oracle=oracle, limit=limit, id=f"{oracle}|{limit.type}|{limit.parsed_window.label}"
    )


CALLS_PER_RUN = _bound("tool", Limit(type="calls", max=2, window="invocation"))
CALLS_PER_GRAPH = _bound("tool", Limit(type="calls", max=5, window="graph"))
COST_PER_DAY = _bound("llm", Limit(type="cost", max=10, window="day", mutable={"cfo": True}))


def _book(clock: VirtualClock, bus: SignalBus | None = None) -> CounterBook:
    limits = {"tool": [CALLS_PER_RUN, CALLS_PER_GRAPH], "llm": [COST_PER_DAY]}
    return CounterBook(MemoryLimitCounters(), clock, bus or SignalBus(), limits)


# -- the counter book ----------------------------------------------------------------------


def test_counter_keys_name_the_scope_of_scoped_windows_only() -> None:
    assert counter_key(COST_PER_DAY, "g1", "run_1") == "llm|cost|day"
    assert counter_key(CALLS_PER_RUN, "g1", "run_1") == "tool|calls|invocation|run_1"
    assert counter_key(CALLS_PER_GRAPH, "g1", "run_1") == "tool|calls|graph|g1"


async def test_the_book_counts_per_scope_and_forgets_a_finished_scope() -> None:
    clock = VirtualClock()
    book = _book(clock)
    now = clock.now()
    book.add_now(CALLS_PER_RUN, 1.0, now, "", "run_1", "tool:search", "")
    book.add_now(CALLS_PER_RUN, 1.0, now, "", "run_1", "tool:search", "")
    await book.add(CALLS_PER_RUN, 1.0, now, "", "run_2", "tool:search", "")
    breach = book.breach_now((CALLS_PER_RUN,), now, "", "run_1", 0.0)
    assert breach is not None
    assert breach[1:] == (2.0, 2.0, 1.0)  # counted, max, what one more call adds
    assert book.breach_now((CALLS_PER_RUN,), now, "", "run_2", 0.0) is None

    await book.end_scope("invocation", "run_1")

    rows = {row.key: row.total for row in await book.store.dump(now=clock.now())}
    assert rows == {"tool|calls|invocation|run_2": 1.0}


async def test_the_book_gives_its_counters_and_mutations_to_another_book() -> None:
    clock = VirtualClock()
    book = _book(clock)
    await book.add(COST_PER_DAY, 4.0, clock.now(), "", "", "llm:a:b", "")
    await book.add(CALLS_PER_RUN, 1.0, clock.now(), "", "run_1", "tool:x", "")
    book.mutations[COST_PER_DAY.id] = Mutation(max=20.0, at=clock.now(), by="cfo")
    counters, mutations = await book.records(clock.now())

    other = _book(clock)
    await other.load(counters, mutations)

    views = {(v.oracle, v.type): v for v in await other.views("llm:a:b", "", "")}
    assert (views["llm", "cost"].accumulated, views["llm", "cost"].max) == (4.0, 20.0)
    assert [v.accumulated for v in await other.views("tool:x", "", "run_1")] == [1.0, 0.0]
    await other.end_scope("invocation", "run_1")  # a loaded scoped counter is still owned
    assert [v.accumulated for v in await other.views("tool:x", "", "run_1")] == [0.0, 0.0]


async def test_a_mutation_lasts_one_window_length() -> None:
    clock = VirtualClock()
    book = _book(clock)
    book.mutations[COST_PER_DAY.id] = Mutation(max=20.0, at=clock.now(), by="cfo")
    assert book.max_of(COST_PER_DAY, clock.now()) == 20.0
    clock.advance(86_400)
    assert book.max_of(COST_PER_DAY, clock.now()) == 10.0
    assert book.mutations == {}


async def test_added_amounts_reach_routine_listeners_only() -> None:
    clock = VirtualClock()
    bus = SignalBus()
    routine: list[str] = []
    decisions: list[str] = []
    bus.subscribe(lambda s: routine.append(s.name))
    bus.subscribe(lambda s: decisions.append(s.name), routine=False)
    book = _book(clock, bus)
    await book.add(COST_PER_DAY, 1.5, clock.now(), "", "", "llm:a:b", "agent")
    assert routine == ["oracle.policy.llm"]
    assert decisions == []


# -- the interrupt desk --------------------------------------------------------------------


def _limit_interrupt(current: float = 10.0) -> Interrupt:
    return Interrupt(
        id="int_1",
        kind="limit",
        action="llm:a:b",
        oracle="llm",
        node="agent",
        limit_type="cost",
        window="day",
        current=current,
        max=10.0,
        approvers=("cfo",),
    )


def _desk(clock: VirtualClock, book: CounterBook | None = None) -> InterruptDesk:
    governor = Governor(clock=clock)
    return InterruptDesk(governor, book or _book(clock), None, None)


async def test_without_a_handler_an_interrupt_waits_and_its_decision_is_taken_once() -> None:
    clock = VirtualClock()
    desk = _desk(clock)
    scope = ActionScope(node="agent", invocation="run_1")
    with pytest.raises(InterruptRequired):
        await desk.resolve(_limit_interrupt(), "llm:a:b", scope)
    assert list(desk.pending) == ["int_1"]

    await desk.decide("int_1", RetryDecision())

    assert desk.pending == {}
    assert desk.take("llm:a:b", "other") is None  # another node's action
    assert desk.take("llm:a:b", "agent") is True
    assert desk.take("llm:a:b", "agent") is None


async def test_desk_decisions_deny_or_substitute_the_action() -> None:
    clock = VirtualClock()
    desk = _desk(clock)
    scope = ActionScope(node="agent")
    for decision in (DenyDecision("no"), ResultDecision("cached")):
        with pytest.raises(InterruptRequired):
            await desk.resolve(_limit_interrupt(), "llm:a:b", scope)
        await desk.decide("int_1", decision)
        if isinstance(decision, DenyDecision):
            with pytest.raises(Denied, match="no"):
                desk.take("llm:a:b", "agent")
        else:
            assert desk.take("llm:a:b", "agent") == Substitute("cached")
    with pytest.raises(UserError, match="No pending interrupt 'int_9'"):
        await desk.decide("int_9", RetryDecision())


def _raise_to(maximum: float, approver: str) -> InterruptHandler:
    def handle(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        return MutateDecision(oracle="llm", limit_type="cost", max=maximum, approver=approver)

    return handle


async def test_a_handlers_mutation_changes_the_books_max() -> None:
    clock = VirtualClock()
    book = _book(clock)
    desk = _desk(clock, book)
    seen: list[GovernanceSignal] = []
    book.bus.subscribe(seen.append, routine=False)
    desk.handler = _raise_to(15, "cfo")
    assert await desk.resolve(_limit_interrupt(), "llm:a:b", ActionScope(node="agent")) is None
    assert book.max_of(COST_PER_DAY, clock.now()) == 15.0
    assert [s.name for s in seen] == [
        "oracle.interrupt.in",
        "oracle.mutation.llm",
        "oracle.interrupt.out",
    ]

    desk.handler = _raise_to(15, "intern")
    with pytest.raises(MutationRefused, match="allowed approvers: 'cfo'"):
        await desk.resolve(_limit_interrupt(), "llm:a:b", ActionScope(node="agent"))


async def test_the_desk_hands_its_pending_and_decided_interrupts_to_another_desk() -> None:
    clock = VirtualClock()
    desk = _desk(clock)
    scope = ActionScope(node="agent")
    with pytest.raises(InterruptRequired):
        await desk.resolve(_limit_interrupt(), "llm:a:b", scope)
    second = dataclasses.replace(_limit_interrupt(), id="int_2", action="llm:c:d")
    with pytest.raises(InterruptRequired):
        await desk.resolve(second, "llm:c:d", scope)
    await desk.decide("int_1", DenyDecision("over budget"))
    pending, decided = desk.records()

    other = _desk(clock)
    other.load(pending, decided)

    assert list(other.pending) == ["int_2"]
    with pytest.raises(Denied, match="over budget"):
        other.take("llm:a:b", "agent")


# -- the action scope ----------------------------------------------------------------------


def test_an_action_scope_is_frozen_and_feeds_policies_and_signals() -> None:
    scope = ActionScope(
        node="writer",
        graph="g1",
        invocation="run_1",
        node_id="n1",
        ancestry=["root"],
        history=("llm:a",),
        target="critic",
        input={"q": 1},
    )
    with pytest.raises(dataclasses.FrozenInstanceError):
        scope.node = "other"  # type: ignore[misc]
    action = scope.policy_action("agent:critic", 5.0, "act_7")
    assert (action.node, action.oracle, action.input, action.target) == (
        "writer",
        "agent:critic",
        {"q": 1},
        "critic",
    )
    assert (action.graph_id, action.invocation_id, action.node_id, action.oracle_id) == (
        "g1",
        "run_1",
        "n1",
        "act_7",
    )
    assert scope.signal_fields("agent:critic", 5.0) == {
        "key": "agent:critic",
        "node": "writer",
        "graph_id": "g1",
        "invocation_id": "run_1",
        "node_id": "n1",
        "ancestry": ("root",),
        "timestamp": 5.0,
    }
