"""Durable governance state: typed, one JSON form, and the older dict forms still load."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import RunState, run_state_from_json, run_state_to_json
from bastion.core import UserError
from bastion.governance import (
    DecidedInterrupt,
    Denied,
    DenyDecision,
    Governor,
    GovernorSnapshot,
    Interrupt,
    Limit,
    MutateDecision,
    SuspendedInterrupt,
    dump_governance_state,
    load_governance_state,
)
from bastion.testing import VirtualClock

INTERRUPT = Interrupt(
    id="int_1",
    kind="limit",
    action="llm:a:b",
    oracle="llm",
    node="agent",
    limit_type="cost",
    window="day",
    current=12.0,
    max=10.0,
    approvers=("cfo",),
    reason="cost limit on 'llm' reached",
)


def _legacy_snapshot() -> dict[str, Any]:
    """A snapshot as ``Governor.snapshot()`` wrote it before the typed form."""
    return {
        "version": 1,
        "taken_at": 100.0,
        "counters": [
            {
                "key": "llm|calls|day",
                "oracle": "llm",
                "type": "calls",
                "window": "day",
                "scope": None,
                "accumulated": 2.0,
                "max": 2.0,
                "original_max": 2.0,
                "window_start": 40.0,
                "seconds": 86400.0,
                "events": [[40.0, 1.0], [90.0, 1.0]],
            }
        ],
        "mutations": [],
        "pending": [INTERRUPT.to_dict()],
        "decided": [{"action": "llm:c:d", "node": "agent", "decision": "deny", "reason": "no"}],
    }


def test_every_durable_form_survives_a_json_round_trip() -> None:
    states = [
        SuspendedInterrupt(interrupt=INTERRUPT, on="tool", tool_call_ids=("c1", "c2")),
        DecidedInterrupt(
            action="llm:a:b",
            node="agent",
            decision=MutateDecision(oracle="llm", limit_type="cost", max=20, approver="cfo"),
        ),
        GovernorSnapshot(taken_at=1.0, pending=(INTERRUPT,)),
    ]
    for state in states:
        data = json.loads(json.dumps(dump_governance_state(state)))
        assert load_governance_state(data) == state


def test_legacy_dict_forms_load_as_typed_state() -> None:
    flat = {**INTERRUPT.to_dict(), "on": "round", "tool_call_ids": ["c1"]}
    assert load_governance_state(flat) == SuspendedInterrupt(
        interrupt=INTERRUPT, on="round", tool_call_ids=("c1",)
    )
    snapshot = load_governance_state(_legacy_snapshot())
    assert isinstance(snapshot, GovernorSnapshot)
    assert snapshot.decided == (
        DecidedInterrupt(action="llm:c:d", node="agent", decision=DenyDecision("no")),
    )
    assert snapshot.counters[0].events == ((40.0, 1.0), (90.0, 1.0))
    with pytest.raises(UserError, match="Not durable governance state"):
        load_governance_state({"something": "else"})


async def test_a_legacy_snapshot_restores_counters_interrupts_and_decisions() -> None:
    clock = VirtualClock(start=100.0)
    governor = Governor(oracles={"llm": [Limit(type="calls", max=2, window="day")]}, clock=clock)

    await governor.restore(_legacy_snapshot())

    assert [i.id for i in governor.pending()] == ["int_1"]
    [view] = await governor.counters("llm:a:b")
    assert (view.accumulated, view.window_start) == (2.0, 40.0)
    with pytest.raises(Denied, match="no"):
        await governor.check("llm:c:d", node="agent")


def test_a_run_state_saved_with_dict_interrupts_loads_typed() -> None:
    state = RunState(run_id="run_1", agent_name="agent", status="awaiting_approval")
    document = json.loads(run_state_to_json(state))
    document["state"]["interrupts"] = [
        {**INTERRUPT.to_dict(), "on": "tool", "tool_call_ids": ["c1"]}
    ]
    document["state"]["governance"] = _legacy_snapshot()

    loaded = run_state_from_json(json.dumps(document))

    assert loaded.interrupts == [
        SuspendedInterrupt(interrupt=INTERRUPT, on="tool", tool_call_ids=("c1",))
    ]
    assert isinstance(loaded.governance, GovernorSnapshot)
    assert [i.id for i in loaded.governance.pending] == ["int_1"]
    again = run_state_from_json(run_state_to_json(loaded))  # and the typed form round-trips
    assert (again.interrupts, again.governance) == (loaded.interrupts, loaded.governance)
