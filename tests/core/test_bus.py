"""EventBus: on, once, off, emit, remove_all_listeners (SPEC A-36; §3.3 scenario 11)."""

from __future__ import annotations

import pytest

from bastion.core import EventBus, ListenerWarning, UserError


def test_on_once_off_and_remove_all() -> None:
    # covers A-36, SPEC §3.3 scenario 11
    seen: list[str] = []
    bus = EventBus()

    def first(event: object) -> None:
        seen.append(f"first {event}")

    def second(event: object) -> None:
        seen.append(f"second {event}")

    bus.on("x", first).on("x", second).once("x", lambda e: seen.append(f"once {e}"))
    assert bus.emit("x", 1) is True
    assert bus.emit("x", 2) is True
    assert seen == ["first 1", "second 1", "once 1", "first 2", "second 2"]
    bus.off("x", first)
    seen.clear()
    bus.emit("x", 3)
    assert seen == ["second 3"]
    bus.on("y", first)
    bus.remove_all_listeners("x")
    assert bus.listener_count("x") == 0
    assert bus.listener_count("y") == 1
    bus.remove_all_listeners()
    assert not bus.active
    assert bus.emit("y", 4) is False


def test_wildcard_listeners_see_every_event() -> None:
    # covers C1 (the bus is fed from the stream for observers)
    seen: list[tuple[str, object]] = []
    bus = EventBus()
    bus.on("*", lambda e: seen.append(("*", e))).on("a", lambda e: seen.append(("a", e)))
    bus.emit("a", 1)
    bus.emit("b", 2)
    assert seen == [("a", 1), ("*", 1), ("*", 2)]


def test_a_raising_listener_is_reported_and_isolated() -> None:
    seen: list[object] = []

    def broken(event: object) -> None:
        raise ValueError("observer bug")

    bus = EventBus().on("a", broken).on("a", seen.append)
    with pytest.warns(ListenerWarning, match="observer bug"):
        bus.emit("a", 1)
    assert seen == [1]


def test_async_listeners_are_refused() -> None:
    async def listener(event: object) -> None:
        return None

    with pytest.raises(UserError, match=r"agent\.stream\(\)"):
        EventBus().on("a", listener)
