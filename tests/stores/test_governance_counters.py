"""StoreCounters: the governor's counters in a store's counters, in fixed windows.

ARCHITECTURE §4 (counters shared across processes).
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import pytest

from bastion.agent import GovernanceOptions
from bastion.core import Usage
from bastion.governance import (
    AtomicLimitCounters,
    Budget,
    Governor,
    Limit,
    MemoryLimitCounters,
    PolicyExceeded,
)
from bastion.stores import StoreCounters, Stores, open_store
from bastion.testing import VirtualClock

DAY = 86_400.0


@pytest.fixture
async def stores() -> AsyncIterator[Stores]:
    async with open_store("memory://") as opened:
        yield opened


def test_only_atomic_stores_count_calls_on_check(stores: Stores) -> None:
    assert isinstance(StoreCounters(stores.counters), AtomicLimitCounters)
    assert not isinstance(MemoryLimitCounters(), AtomicLimitCounters)
    assert Governor(store=StoreCounters(stores.counters)).counts_on_check
    assert not Governor().counts_on_check


async def test_windows_are_fixed_buckets_aligned_to_their_length(stores: Stores) -> None:
    clock = VirtualClock(start=DAY * 20_000 + 50.0)  # 50 s into a minute
    counters = StoreCounters(stores.counters, clock=clock)
    governor = Governor(
        oracles={"api": [Limit(type="calls", max=2, window="minute")]},
        store=counters,
        clock=clock,
    )
    for _ in range(2):
        await governor.exec("api", lambda: "ok")
    with pytest.raises(PolicyExceeded):
        await governor.exec("api", lambda: "ok")
    start = await counters.window_start("api|calls|minute", now=clock.now(), seconds=60.0)
    assert start == DAY * 20_000
    clock.advance(10.0)  # the next minute starts: everything is forgotten at once
    assert await counters.get("api|calls|minute", now=clock.now(), seconds=60.0) == 0.0
    assert await counters.window_start("api|calls|minute", now=clock.now(), seconds=60.0) is None
    await governor.exec("api", lambda: "ok")
    # The bucket is the row's window_start in the store: floor(now / seconds).
    assert await stores.counters.get("api|calls|minute", window_start=20_000 * 1440 + 1) == 1.0


async def test_two_governors_sharing_a_store_admit_exactly_the_limit(stores: Stores) -> None:
    governors = [
        Governor(
            oracles={"llm": [Limit(type="calls", max=12, window="day")]},
            store=StoreCounters(stores.counters),
        )
        for _ in range(2)
    ]

    async def call() -> str:
        await asyncio.sleep(0)
        return "ok"

    async def attempt(governor: Governor) -> bool:
        try:
            await governor.exec("llm", call)
        except PolicyExceeded:
            return False
        return True

    results = await asyncio.gather(*(attempt(g) for g in governors for _ in range(10)))
    assert sum(results) == 12


class _StaleReads(StoreCounters):
    """Reads see nothing, as when another process counts between a check and the count."""

    async def get(self, key: str, *, now: float, seconds: float | None) -> float:
        return 0.0


async def test_the_count_is_atomic_even_when_the_check_read_stale_data(stores: Stores) -> None:
    store = _StaleReads(stores.counters)
    governor = Governor(
        oracles={
            "llm": [Limit(type="calls", max=10, window="day")],
            "llm:a": [Limit(type="calls", max=2, window="day")],
        },
        store=store,
    )
    await governor.check("llm:a", calls=1)
    await governor.check("llm:a", calls=1)
    with pytest.raises(PolicyExceeded):  # try_add refused, the stale check passed it
        await governor.check("llm:a", calls=1)
    now = governor.clock.now()
    assert await StoreCounters(stores.counters).get("llm:a|calls|day", now=now, seconds=DAY) == 2
    # The call reserved on the parent limit was given back.
    assert await StoreCounters(stores.counters).get("llm|calls|day", now=now, seconds=DAY) == 2


async def test_exec_counts_a_call_once_when_admitted(stores: Stores) -> None:
    governor = Governor(
        oracles={"llm": [Limit(type="calls", max=5, window="day")]},
        budget=Budget(cost_usd=1.0, window="day"),
        store=StoreCounters(stores.counters),
    )
    await governor.exec("llm", lambda: Usage(prompt_tokens=1, cost_usd=0.25))
    with pytest.raises(RuntimeError):
        await governor.exec("llm", _fail)
    counters = {row.key: row.total for row in await governor.store.dump(now=governor.clock.now())}
    assert counters == {"llm|calls|day": 2.0, "llm|cost|day": 0.25}


def _fail() -> None:
    raise RuntimeError("boom")


async def test_restore_never_counts_twice_and_discard_deletes(stores: Stores) -> None:
    clock = VirtualClock()
    governor = Governor(
        oracles={"llm": [Limit(type="calls", max=5, window="invocation")]},
        store=StoreCounters(stores.counters, clock=clock),
        clock=clock,
    )
    await governor.check("llm", calls=2, invocation="run1")
    snapshot = await governor.snapshot()
    assert [(c["key"], c["accumulated"]) for c in snapshot["counters"]] == [
        ("llm|calls|invocation|run1", 2.0)
    ]
    other = Governor(
        oracles={"llm": [Limit(type="calls", max=5, window="invocation")]},
        store=StoreCounters(stores.counters, clock=clock),
        clock=clock,
    )
    await other.restore(snapshot)  # the shared store already holds it: kept as it is
    assert await stores.counters.get("llm|calls|invocation|run1") == 2.0
    await stores.counters.reset("llm|calls|invocation|run1")
    await other.restore(snapshot)  # a store without it: filled from the snapshot
    assert await stores.counters.get("llm|calls|invocation|run1") == 2.0
    await other.store.discard(["llm|calls|invocation|run1"])
    assert await stores.counters.get("llm|calls|invocation|run1") == 0.0
    assert await other.store.dump(now=clock.now()) == []


async def test_agent_model_calls_are_counted_once_when_admitted(stores: Stores) -> None:
    from bastion import Agent
    from bastion.testing import ScriptedModel

    governor = Governor(
        oracles={"llm": [Limit(type="calls", max=5, window="day")]},
        store=StoreCounters(stores.counters),
    )
    agent = Agent(
        "worker",
        model=ScriptedModel(["one", "two"]),
        governance=GovernanceOptions(governor=governor),
    )
    assert (await agent.run("a")).output == "one"
    assert (await agent.run("b")).output == "two"
    now = governor.clock.now()
    assert await governor.store.get("llm|calls|day", now=now, seconds=DAY) == 2.0


async def test_a_mutable_calls_limit_interrupts_and_a_raise_admits_the_call(
    stores: Stores,
) -> None:
    from bastion.governance import InterruptRequired, MutateDecision, ResultDecision

    governor = Governor(
        oracles={"tool:trade": [Limit(type="calls", max=1, mutable={"ops": True})]},
        store=StoreCounters(stores.counters),
    )
    assert await governor.exec("tool:trade", lambda: "first") == "first"
    with pytest.raises(InterruptRequired) as raised:
        await governor.exec("tool:trade", lambda: "second")
    await governor.decide(raised.value.interrupt.id, ResultDecision(value="cached"))
    assert await governor.exec("tool:trade", lambda: "never") == "cached"
    assert await stores.counters.get("tool:trade|calls|all") == 1.0  # a substitute: not counted
    with pytest.raises(InterruptRequired) as raised:
        await governor.exec("tool:trade", lambda: "third")
    await governor.decide(
        raised.value.interrupt.id, MutateDecision(oracle="tool:trade", limit_type="calls", max=2)
    )
    assert await governor.exec("tool:trade", lambda: "third") == "third"
    assert await stores.counters.get("tool:trade|calls|all") == 2.0
