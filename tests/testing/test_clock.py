"""``VirtualClock``: time moves only when a test says so, or when something sleeps."""

import asyncio

import pytest

from bastion.core import Clock
from bastion.testing import VirtualClock


def test_virtual_clock_is_a_clock():
    # covers C19
    assert isinstance(VirtualClock(), Clock)


async def test_auto_advance_moves_time_at_once_and_records_sleeps():
    # covers C19, C11
    clock = VirtualClock(start=1000.0)
    assert (clock.now(), clock.monotonic()) == (1000.0, 0.0)
    await clock.sleep(1.5)
    await clock.sleep(0.5)
    assert clock.sleeps == [1.5, 0.5]
    assert clock.now() == 1002.0
    assert clock.monotonic() == 2.0


async def test_auto_advance_never_moves_time_backwards():
    # covers C19
    clock = VirtualClock(start=0.0)
    await clock.sleep(-3)
    assert clock.sleeps == [-3]
    assert clock.now() == 0.0


async def test_auto_advance_sleep_lets_other_tasks_run():
    # covers C19
    clock = VirtualClock()
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    task = asyncio.ensure_future(other())
    await clock.sleep(10)
    assert ran == ["other"]
    await task


async def test_manual_mode_wakes_sleepers_only_when_advance_passes_their_deadline():
    # covers C19
    clock = VirtualClock(start=0.0, auto_advance=False)
    woke: list[float] = []

    async def sleeper(seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(seconds)

    late, early, middle = (asyncio.ensure_future(sleeper(s)) for s in (3.0, 1.0, 2.0))
    await clock.wait_for_sleepers(3)
    assert (woke, clock.pending) == ([], 3)

    clock.advance(0.5)
    assert clock.pending == 3

    clock.advance(0.5)  # exactly at the 1.0 deadline
    assert clock.pending == 2
    await early
    assert woke == [1.0]

    clock.advance(5.0)
    await asyncio.gather(middle, late)
    assert woke == [1.0, 2.0, 3.0]
    assert clock.pending == 0
    assert clock.now() == 6.0
    assert clock.sleeps == [3.0, 1.0, 2.0]


async def test_manual_mode_wakes_in_deadline_order_on_one_big_advance():
    # covers C19
    clock = VirtualClock(start=0.0, auto_advance=False)
    woke: list[str] = []

    async def sleeper(name: str, seconds: float) -> None:
        await clock.sleep(seconds)
        woke.append(name)

    tasks = [
        asyncio.ensure_future(sleeper(name, s))
        for name, s in (("late", 9.0), ("early", 1.0), ("tie-a", 5.0), ("tie-b", 5.0))
    ]
    await clock.wait_for_sleepers(4)
    clock.advance(100)
    await asyncio.gather(*tasks)
    assert woke == ["early", "tie-a", "tie-b", "late"]


async def test_wait_for_sleepers_returns_once_enough_sleepers_wait():
    # covers C19
    clock = VirtualClock(auto_advance=False)
    await clock.wait_for_sleepers(0)
    first = asyncio.ensure_future(clock.sleep(5))
    await clock.wait_for_sleepers(1)
    waiting = asyncio.ensure_future(clock.wait_for_sleepers(2))
    await clock.wait_for_sleepers(1)
    assert not waiting.done()
    second = asyncio.ensure_future(clock.sleep(7))
    await waiting
    assert clock.pending == 2
    clock.advance(10)
    await asyncio.gather(first, second)


async def test_manual_mode_zero_sleep_returns_without_advancing():
    # covers C19
    clock = VirtualClock(start=0.0, auto_advance=False)
    await clock.sleep(0)
    assert (clock.now(), clock.pending) == (0.0, 0)


async def test_a_cancelled_sleeper_is_no_longer_pending():
    # covers C19
    clock = VirtualClock(auto_advance=False)
    task = asyncio.ensure_future(clock.sleep(5))
    await clock.wait_for_sleepers(1)
    assert clock.pending == 1
    task.cancel()
    await asyncio.gather(task, return_exceptions=True)
    assert clock.pending == 0
    clock.advance(10)


def test_advance_backwards_is_refused():
    # covers C19
    clock = VirtualClock(start=5.0)
    with pytest.raises(ValueError, match="Cannot move a clock backwards"):
        clock.advance(-1)
    assert clock.now() == 5.0
