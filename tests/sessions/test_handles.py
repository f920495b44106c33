"""Two handles (two agents) on one chat in one process: one owner per turn, no double work."""

from __future__ import annotations

import json

from bastion import Agent
from bastion.sessions import Session
from bastion.stores import open_store
from bastion.testing import Call, ScriptedModel, Turn

from ._support import answered, texts, tools


async def test_two_handles_approving_one_waiting_turn_run_the_call_once() -> None:
    # covers S-20
    """Both handles approve the same call: it runs once, and the chat stays one valid chain."""
    stores = open_store("memory://")
    log: list[str] = []
    script = [Turn(tool_calls=[Call("pay", {"to": "bob", "amount": 5}, id="c1")]), "Paid."]
    first: Session = Session(
        Agent("bank", model=ScriptedModel(script), tools=tools(log), store=stores), "chat"
    )
    first.send("pay bob")
    await first.wait_for_idle()
    assert [r.tool_call_id for r in first.pending_approvals] == ["c1"]
    other_agent = Agent(
        "bank", model=ScriptedModel(["Paid again."]), tools=tools(log), store=stores
    )
    second = await Session.resume(other_agent, "chat")
    assert [r.tool_call_id for r in second.pending_approvals] == ["c1"]
    first.approve("c1")
    await first.wait_for_idle()
    second.approve("c1")  # its view is stale: the turn went on in the first handle
    await second.wait_for_idle()
    assert log == ["pay bob 5"]  # the approved call ran once
    assert second.pending_approvals == []
    assert texts(second.messages) == texts(first.messages)
    assert texts(first.messages) == [
        "user:pay bob",
        "assistant:calls",
        "tool:c1",
        "assistant:Paid.",
    ]
    entries = await stores.sessions.entries("chat")
    assert [e.parent_id for e in entries] == [None, *(e.entry_id for e in entries[:-1])]
    assert [e.kind for e in entries].count("resumed") == 1
    reopened = await Session.resume(other_agent, "chat")
    assert answered(reopened.messages)
    assert reopened.pending_approvals == []
    assert "Paid again." not in json.dumps([e.payload for e in entries])


async def test_two_handles_sending_at_once_take_turns() -> None:
    # covers S-07, S-20
    """Messages sent to two handles at once run as two whole turns, one after the other."""
    stores = open_store("memory://")
    log: list[str] = []
    a = Session(
        Agent("helper", model=ScriptedModel(["One."]), tools=tools(log), store=stores), "chat"
    )
    b = Session(
        Agent("helper", model=ScriptedModel(["Two."]), tools=tools(log), store=stores), "chat"
    )
    a.send("first")
    b.send("second")
    await a.wait_for_idle()
    await b.wait_for_idle()
    entries = await stores.sessions.entries("chat")
    assert [e.parent_id for e in entries] == [None, *(e.entry_id for e in entries[:-1])]
    reopened = await Session.resume(Agent("helper", model=ScriptedModel([]), store=stores), "chat")
    assert texts(reopened.messages) in (
        ["user:first", "assistant:One.", "user:second", "assistant:Two."],
        ["user:second", "assistant:Two.", "user:first", "assistant:One."],
    )
