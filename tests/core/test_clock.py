"""The real clock satisfies the ``Clock`` protocol that everything waiting goes through."""

from bastion.core import Clock, SystemClock


def test_system_clock_is_a_clock():
    # covers C19
    assert isinstance(SystemClock(), Clock)


def test_system_clock_reports_wall_and_monotonic_time():
    # covers C19
    clock = SystemClock()
    first = clock.monotonic()
    assert clock.monotonic() >= first
    assert clock.now() > 1_600_000_000


async def test_system_clock_sleep_waits_on_the_monotonic_clock():
    # covers C19
    clock = SystemClock()
    start = clock.monotonic()
    await clock.sleep(0.001)
    # asyncio may wake a timer up to the loop's clock resolution early (nanoseconds).
    assert clock.monotonic() - start >= 0.001 - 1e-6
