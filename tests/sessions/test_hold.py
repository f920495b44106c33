"""``on_pending_approvals="hold"``: a steering message waits for the approval, not denying it."""

from __future__ import annotations

import pytest

from bastion import Agent
from bastion.core import UserError
from bastion.sessions import Session
from bastion.testing import Call, ScriptedModel, Turn

from ._support import record, texts, tools


def _script() -> list[Turn | str]:
    pay = Call("pay", {"to": "bob", "amount": 5}, id="c1")
    return [Turn(tool_calls=[pay]), "Paid, and only bob."]


async def test_hold_keeps_steering_until_the_approval_is_decided() -> None:
    log: list[str] = []
    model = ScriptedModel(_script())
    agent = Agent("bank", model=model, tools=tools(log))
    session: Session = Session(agent, on_pending_approvals="hold")
    lines = record(session)
    session.send("pay bob")
    await session.wait_for_idle()
    steer = session.send("only bob, please")
    await session.wait_for_idle()
    assert steer.status == "pending"  # held: the call still waits for a human
    assert [r.tool_call_id for r in session.pending_approvals] == ["c1"]
    assert log == []
    session.approve("c1")
    await session.wait_for_idle()
    assert log == ["pay bob 5"]  # approved, run once
    assert steer.status == "done"
    assert texts(list(model.requests[1].messages)) == [
        "user:pay bob",
        "assistant:calls",
        "tool:c1",
        "user:only bob, please",  # joined after the result, before the next call
    ]
    assert lines[-3:] == [
        "message assistant 0 calls",
        "step stop",
        "turn_end 5 'Paid, and only bob.'",
    ]


async def test_deny_is_the_default_and_other_modes_are_refused() -> None:
    agent = Agent("bank", model=ScriptedModel(_script()), tools=tools([]))
    assert Session(agent).on_pending_approvals == "deny"
    with pytest.raises(UserError, match=r"'deny'.*'hold'"):
        Session(agent, on_pending_approvals="fail")  # pyright: ignore[reportArgumentType]
