"""Signals as data (``Governor.subscribe_data``) match the typed signals field for field."""

from __future__ import annotations

from typing import Any

from bastion.governance import (
    GovernanceSignal,
    Governor,
    Limit,
    PolicySignal,
    signal_data,
)
from bastion.testing import VirtualClock


async def test_data_listeners_get_exactly_the_typed_signals_fields() -> None:
    # covers L-29, L-30
    clock = VirtualClock(1_000.0)
    oracles = {"llm": [Limit(type="calls", max=5, window="minute")]}
    typed: list[GovernanceSignal] = []
    both: list[tuple[str, dict[str, Any]]] = []
    only: list[tuple[str, dict[str, Any]]] = []

    mixed = Governor(oracles=oracles, clock=clock)
    mixed.subscribe(typed.append)
    mixed.subscribe_data(lambda name, data: both.append((name, data)))
    fast = Governor(oracles=oracles, clock=clock)  # data listeners only: the direct path
    stop = fast.subscribe_data(lambda name, data: only.append((name, data)))
    for governor in (mixed, fast):
        await governor.record("llm:a:b", node="agent", invocation="run_1")
        await governor.check("llm:a:b", node="agent", invocation="run_1", calls=1)

    assert [type(s) for s in typed] == [PolicySignal, PolicySignal]
    expected = [(s.name, signal_data(s)) for s in typed]
    assert both == expected
    assert only == expected
    assert expected[1] == (
        "oracle.policy.llm",
        {
            "key": "llm:a:b",
            "node": "agent",
            "invocation_id": "run_1",
            "graph_id": "",
            "node_id": "",
            "ancestry": [],
            "timestamp": 1_000.0,
            "oracle": "llm",
            "limit_type": "calls",
            "window": "minute",
            "amount": 1.0,
            "accumulated": 2.0,
            "max": 5.0,
            "breakdown": {},
        },
    )
    stop()
    await fast.record("llm:a:b")
    assert len(only) == 2  # unsubscribed


async def test_signal_data_copies_containers_into_plain_json_types() -> None:
    signal = PolicySignal(
        key="k",
        ancestry=("root", "child"),
        oracle="llm",
        limit_type="cost",
        window="day",
        amount=0.5,
        accumulated=1.5,
        max=10.0,
        breakdown={"prompt_tokens": 3.0},
    )
    data = signal_data(signal)
    assert data["ancestry"] == ["root", "child"]
    assert data["breakdown"] == {"prompt_tokens": 3.0}
    assert data["breakdown"] is not signal.breakdown
    assert "type" not in data
