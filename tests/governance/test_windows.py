"""Window parsing and sliding-window arithmetic (L-19)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bastion.core import UserError
from bastion.governance import MemoryLimitCounters, parse_window
from bastion.governance._windows import SlidingCounter


def test_named_numeric_scoped_windows() -> None:
    # covers L-19
    assert parse_window("minute").seconds == 60
    assert parse_window("month").seconds == 30 * 86_400
    assert parse_window(90).label == "90s"
    assert parse_window("graph").scope == "graph"
    assert parse_window(None).label == "all"
    with pytest.raises(UserError, match="Unknown window 'fortnight'"):
        parse_window("fortnight")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="must be > 0"):
        parse_window(0)


events_strategy = st.lists(
    st.tuples(
        st.floats(min_value=0, max_value=500, allow_nan=False),  # time step
        st.integers(min_value=0, max_value=1_000),  # amount
    ),
    max_size=60,
)


@given(window=st.floats(min_value=0.5, max_value=200, allow_nan=False), events=events_strategy)
def test_sliding_sum_equals_brute_force_recount(
    window: float, events: list[tuple[float, int]]
) -> None:
    # covers L-19
    counter = SlidingCounter(window)
    now = 0.0
    seen: list[tuple[float, int]] = []
    for step, amount in events:
        now += step
        counter.add(float(amount), now)
        seen.append((now, amount))
        expected = sum(a for t, a in seen if t > now - window)
        assert counter.value(now) == pytest.approx(expected)
        assert counter.value(now) >= 0
        # Looking later never counts more, and never goes negative.
        later = now + window / 2
        assert counter.value(later) == pytest.approx(sum(a for t, a in seen if t > later - window))
        assert counter.value(later) >= 0
        now = later


@given(amounts=st.lists(st.floats(min_value=0, max_value=1e6, allow_nan=False), max_size=40))
def test_fractional_amounts_never_leave_a_negative_total(amounts: list[float]) -> None:
    # covers L-19
    counter = SlidingCounter(10.0)
    for i, amount in enumerate(amounts):
        counter.add(amount, float(i))
    assert counter.value(1e9) == 0.0
    assert list(counter.events) == []


def test_unbounded_counter_keeps_no_event_list() -> None:
    counter = SlidingCounter(None)
    for i in range(100):
        counter.add(1.0, float(i))
    assert counter.value(1e12) == 100
    assert len(counter.events) == 0


async def test_memory_store_dump_and_load_round_trip() -> None:
    # covers L-32
    store = MemoryLimitCounters()
    await store.add("a|calls|minute", 1, now=0.0, seconds=60)
    await store.add("a|calls|minute", 2, now=30.0, seconds=60)
    await store.add("a|cost|all", 0.5, now=30.0, seconds=None)
    rows = await store.dump(now=40.0)
    other = MemoryLimitCounters()
    await other.load(rows)
    assert await other.window_start("a|calls|minute", now=40.0, seconds=60) == 0.0
    assert await other.get("a|calls|minute", now=40.0, seconds=60) == 3
    assert await other.get("a|calls|minute", now=61.0, seconds=60) == 2
    assert await other.window_start("a|calls|minute", now=61.0, seconds=60) == 30.0
    assert await other.get("a|cost|all", now=1e9, seconds=None) == 0.5
