"""Approvals inside sessions: suspend, decide, steer, resume in another agent (C4, S-17)."""

from __future__ import annotations

from pathlib import Path

import pytest

from bastion import Agent
from bastion.core import Usage, UserError
from bastion.governance import Budget, MutateDecision, RetryDecision
from bastion.sessions import ApprovalRequested, InterruptRequested, Session
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import Directive, InterruptResolution

from ._support import answered, record, texts, tools


def _script(answer: str = "Paid") -> list[Turn | str]:
    return [
        Turn(
            tool_calls=[
                Call("pay", {"to": "bob", "amount": 5}, id="c1"),
                Call("look", {"what": "a"}, id="c2"),
            ]
        ),
        answer,
    ]


SUSPENDED = [
    "message user 'pay bob'",
    "message assistant 2 calls",
    "step tool_calls",
    "tool_call pay#c1",
    "tool_call look#c2",
    "tool_result look#c2 'saw a' False",
    "approval_requested pay#c1",
]


async def test_a_call_needing_approval_suspends_the_turn_until_approved() -> None:
    # covers S-19, C4
    log: list[str] = []
    model = ScriptedModel(_script())
    session: Session = Session(Agent("bank", model=model, tools=tools(log)))
    lines = record(session)
    session.send("pay bob")
    await session.wait_for_idle()  # returns: the turn waits for a human
    assert lines == SUSPENDED
    assert not session.running
    assert [(r.tool_call_id, r.tool_name, r.arguments) for r in session.pending_approvals] == [
        ("c1", "pay", {"to": "bob", "amount": 5})
    ]
    assert log == ["a"]  # the other call ran; the paying one waits
    assert texts(session.messages) == ["user:pay bob", "assistant:calls"]

    session.approve("c1")
    assert session.pending_approvals == []
    await session.wait_for_idle()
    assert lines[len(SUSPENDED) :] == [
        "tool_result pay#c1 'paid 5 to bob' False",
        "text_delta 'Paid'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 5 'Paid'",
    ]
    assert log == ["a", "pay bob 5"]
    assert texts(session.messages) == [
        "user:pay bob",
        "assistant:calls",
        "tool:c1",  # results in call order
        "tool:c2",
        "assistant:Paid",
    ]
    assert texts(list(model.requests[1].messages)) == texts(session.messages)[:4]


async def test_deny_tells_the_model_why_and_bad_decisions_are_user_errors() -> None:
    # covers C4
    log: list[str] = []
    model = ScriptedModel(_script("Not paid"))
    session: Session = Session(Agent("bank", model=model, tools=tools(log)))
    with pytest.raises(UserError, match="not waiting for approvals"):
        session.approve("c1")
    results: list[tuple[str, str, bool]] = []
    session.on("tool_result", lambda e: results.append((e.call_id, e.result, e.is_error)))
    session.send("pay bob")
    await session.wait_for_idle()
    with pytest.raises(UserError, match="'c9' is not pending"):
        session.deny("c9")
    session.deny("c1", "too much")
    with pytest.raises(UserError, match="'c1' is not pending"):
        session.approve("c1")  # already decided
    await session.wait_for_idle()
    assert results == [("c2", "saw a", False), ("c1", "Denied: too much", True)]
    assert log == ["a"]
    assert texts(session.messages)[-1] == "assistant:Not paid"


async def test_a_listener_may_decide_at_once() -> None:
    # covers C4
    log: list[str] = []
    session: Session = Session(Agent("bank", model=ScriptedModel(_script()), tools=tools(log)))

    def approve(event: ApprovalRequested) -> None:
        session.approve(event.request.tool_call_id, arguments={"to": "bob", "amount": 3})

    session.on("approval_requested", approve)
    session.send("pay bob")
    await session.wait_for_idle()
    assert log == ["a", "pay bob 3"]  # approved with edited arguments
    assert texts(session.messages)[-1] == "assistant:Paid"


async def test_steering_while_suspended_denies_the_pending_calls_and_goes_on() -> None:
    # covers C12, S-17, S-19: the steering message lands after the (denied) results
    log: list[str] = []
    model = ScriptedModel(_script("Cancelled"))
    session: Session = Session(Agent("bank", model=model, tools=tools(log)))
    lines = record(session)
    session.send("pay bob")
    await session.wait_for_idle()
    session.send("never mind", mode="steer")
    await session.wait_for_idle()
    assert lines[len(SUSPENDED) :] == [
        "tool_result pay#c1 'Denied: steered' True",
        "message user 'never mind'",
        "text_delta 'Cancelled'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 6 'Cancelled'",
    ]
    assert log == ["a"]
    assert texts(list(model.requests[1].messages)) == [
        "user:pay bob",
        "assistant:calls",
        "tool:c1!",
        "tool:c2",
        "user:never mind",
    ]
    assert session.pending_approvals == []


async def test_a_queued_message_waits_for_the_decision() -> None:
    # covers C12
    log: list[str] = []
    model = ScriptedModel([*_script(), "Later done"])
    session: Session = Session(Agent("bank", model=model, tools=tools(log)))
    session.send("pay bob")
    await session.wait_for_idle()
    later = session.send("and then?", mode="queue")
    await session.wait_for_idle()
    assert later.status == "pending"
    assert [r.tool_call_id for r in session.pending_approvals] == ["c1"]
    session.approve("c1")
    await session.wait_for_idle()
    assert later.status == "done"
    assert texts(session.messages)[-3:] == [
        "assistant:Paid",
        "user:and then?",
        "assistant:Later done",
    ]


async def test_abort_while_suspended_denies_the_pending_calls() -> None:
    log: list[str] = []
    model = ScriptedModel([*_script(), "after abort"])
    session: Session = Session(Agent("bank", model=model, tools=tools(log)))
    lines = record(session)
    sent = session.send("pay bob")
    await session.wait_for_idle()
    assert sent.status == "running"
    assert sent.abort()
    await session.wait_for_idle()  # an abort is not raised
    assert sent.status == "aborted"
    assert lines[len(SUSPENDED) :] == [
        "tool_result pay#c1 'Denied: aborted' True",
        "error TurnAborted",
        "turn_end 4 ''",
    ]
    assert log == ["a"]
    assert answered(session.messages)
    assert session.pending_approvals == []
    session.send("next")
    await session.wait_for_idle()
    assert texts(session.messages)[-2:] == ["user:next", "assistant:Paid"]


async def test_the_suspension_survives_resume_session_in_a_new_agent(tmp_path: Path) -> None:
    # covers S-03, S-20, C4
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    log: list[str] = []
    first = Agent("bank", model=ScriptedModel(_script()), tools=tools(log), store=url)
    session = Session(first, "chat")
    session.send("pay bob")
    await session.wait_for_idle()
    exported = await session.export_jsonl()
    await first.aclose()

    model = ScriptedModel(["Paid later"])
    second = Agent("bank", model=model, tools=tools(log), store=url)
    with pytest.raises(UserError, match=r"await Session.resume\(agent, 'chat'\)"):
        Session(second, "chat").approve("c1")  # not read from the store: says how to open it
    resumed = await Session.resume(second, "chat")
    assert [r.tool_call_id for r in resumed.pending_approvals] == ["c1"]
    assert texts(resumed.messages) == ["user:pay bob", "assistant:calls"]
    lines = record(resumed)
    resumed.approve("c1")
    await resumed.wait_for_idle()
    assert lines == [
        "tool_result pay#c1 'paid 5 to bob' False",
        "text_delta 'Paid '",
        "text_delta 'later'",
        "message assistant 0 calls",
        "step stop",
        "turn_end 5 'Paid later'",
    ]
    assert log == ["a", "pay bob 5"]  # each call ran once, across the two agents
    assert texts(resumed.messages) == [
        "user:pay bob",
        "assistant:calls",
        "tool:c1",
        "tool:c2",
        "assistant:Paid later",
    ]
    entries = await (await second.stores()).sessions.entries("chat")
    assert [e.kind for e in entries] == [
        "message",
        "message",
        "suspended",
        "decided",
        "resumed",
        "message",
        "message",
        "message",
    ]
    assert [e.parent_id for e in entries[1:]] == [e.entry_id for e in entries[:-1]]
    reopened = await Session.resume(second, "chat")
    assert reopened.pending_approvals == []
    await second.aclose()

    # An export taken while the turn waited imports waiting, into another agent's store.
    third = Agent("bank", model=ScriptedModel(["Imported"]), tools=tools([]))
    imported = await Session.import_jsonl(third, exported)
    assert [r.tool_call_id for r in imported.pending_approvals] == ["c1"]
    assert await imported.export_jsonl() == exported


async def test_a_governance_interrupt_waits_for_session_decide() -> None:
    # covers C4: a budget with no handle_interrupt suspends the turn on an interrupt
    cfo = "human:cfo"
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("look", {"what": "a"}, id="c1")], usage=Usage(cost_usd=6)),
            Turn(tool_calls=[Call("look", {"what": "b"}, id="c2")], usage=Usage(cost_usd=6)),
            Turn(text="done", usage=Usage(cost_usd=1)),
        ]
    )
    agent = Agent(
        "analyst",
        model=model,
        tools=tools([]),
        budget=Budget(cost_usd=10, window="day", mutable_by=cfo, ceiling=50),
        clock=VirtualClock(),
    )
    session: Session = Session(agent)
    requested: list[InterruptRequested] = []
    session.on("interrupt_requested", requested.append)
    session.send("research")
    await session.wait_for_idle()
    assert session.pending_approvals == []
    [interrupt] = session.pending_interrupts
    # Listeners hear of the wait: the interrupt, its id and why.
    assert [(r.id, r.interrupt) for r in requested] == [(interrupt["id"], interrupt)]
    assert "cost" in requested[0].reason
    assert (interrupt["oracle"], interrupt["limit_type"], interrupt["max"]) == ("llm", "cost", 10)
    with pytest.raises(UserError, match="Interrupt 'nope' is not pending"):
        session.decide(
            Directive(
                interrupts=[InterruptResolution(interrupt_id="nope", decision=RetryDecision())]
            )
        )
    quick = session.send("be quick", mode="steer")  # waits: only a human decides a budget
    await session.wait_for_idle()
    assert quick.status == "pending"
    assert len(session.pending_interrupts) == 1
    raise_to = MutateDecision(oracle="llm", limit_type="cost", max=20, approver=cfo)
    session.decide(
        Directive(interrupts=[InterruptResolution(interrupt_id=interrupt["id"], decision=raise_to)])
    )
    await session.wait_for_idle()
    assert session.pending_interrupts == []
    assert texts(session.messages)[-3:] == ["tool:c2", "user:be quick", "assistant:done"]
    assert texts(list(model.requests[2].messages))[-1] == "user:be quick"
    assert answered(session.messages)


async def test_a_decision_made_one_at_a_time_survives_a_new_process(tmp_path: Path) -> None:
    # covers S-20, C4: no lost approval: each decide() is stored before the turn resumes
    url = f"sqlite:///{tmp_path / 'sessions.db'}"
    log: list[str] = []
    two_payments: list[Turn | str] = [
        Turn(
            tool_calls=[
                Call("pay", {"to": "bob", "amount": 5}, id="c1"),
                Call("pay", {"to": "ann", "amount": 7}, id="c2"),
            ]
        ),
        "Paid bob only",
    ]
    first = Agent("bank", model=ScriptedModel(two_payments), tools=tools(log), store=url)
    session = Session(first, "chat")
    session.send("pay bob and ann")
    await session.wait_for_idle()
    assert [r.tool_call_id for r in session.pending_approvals] == ["c1", "c2"]
    session.approve("c1")  # the human decides one call, then the process goes away
    await session.wait_for_idle()
    assert [r.tool_call_id for r in session.pending_approvals] == ["c2"]
    await first.aclose()

    second = Agent("bank", model=ScriptedModel(["Paid bob only"]), tools=tools(log), store=url)
    resumed = await Session.resume(second, "chat")
    assert [r.tool_call_id for r in resumed.pending_approvals] == ["c2"]  # c1 stays decided
    resumed.deny("c2", "not ann")
    await resumed.wait_for_idle()
    assert log == ["pay bob 5"]
    assert texts(resumed.messages)[-3:] == ["tool:c1", "tool:c2!", "assistant:Paid bob only"]
    kinds = [e.kind for e in await (await second.stores()).sessions.entries("chat")]
    assert kinds[2:5] == ["suspended", "decided", "decided"]
    assert kinds[5] == "resumed"
    await second.aclose()
