"""Approvals: suspend, JSON round trip, resume elsewhere, callbacks (SPEC C4, G-53..G-55, T-07)."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import ToolOptions, run_state_from_json, run_state_to_json
from bastion.core import ToolMessage, UserError
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import ApprovalConfig, ApprovalDecision, ApprovalRequest, Directive, Tool

from .conftest import brief


class Ledger:
    """Records every real execution of the side-effecting tool."""

    def __init__(self) -> None:
        self.sent: list[str] = []

    def tools(self) -> list[Tool]:
        ledger = self

        @tool(side_effect_class="side_effecting", needs_approval=True, label="Send money")
        def transfer(to: str, amount: int) -> str:
            """Send money to someone."""
            ledger.sent.append(f"{to}:{amount}")
            return f"sent {amount} to {to}"

        @tool(side_effect_class="read_only")
        def balance() -> int:
            """Read the balance."""
            return 100

        return [transfer, balance]


def suspending_script() -> list[Turn | str]:
    return [
        Turn(
            tool_calls=[
                Call("transfer", {"to": "bob", "amount": 5}, id="c1"),
                Call("balance", {}, id="c2"),
            ]
        ),
        "unused: the run suspends before a second model call",
    ]


async def test_suspend_round_trip_and_resume_in_a_new_agent_runs_the_call_once() -> None:
    # covers G-26, G-53, G-54, G-55, T-07, C4, D2
    ledger = Ledger()
    first = Agent("bank", model=ScriptedModel(suspending_script()), tools=ledger.tools())
    events = [e async for e in first.stream("pay bob 5")]
    assert brief(events) == [
        "agent.start",
        "step.start 1",
        "tool.call.start transfer#c1",
        "tool.call.delta",
        "tool.call.end transfer#c1",
        "tool.call.start balance#c2",
        "tool.call.delta",
        "tool.call.end balance#c2",
        "tool.approval.requested transfer#c1",
        "tool.execute.start balance#c2",
        "tool.execute.end balance#c2",
        "step.end 1 tool_calls",
        "agent.end awaiting_approval",
    ]
    requested = events[8]
    assert requested.type == "tool.approval.requested"
    assert requested.arguments == '{"to": "bob", "amount": 5}'
    assert requested.classification["side_effect_class"] == "side_effecting"
    assert requested.classification["needs_approval"] is True
    assert requested.classification["label"] == "Send money"
    assert ledger.sent == []

    suspended = await Agent(
        "bank", model=ScriptedModel(suspending_script()), tools=Ledger().tools()
    ).run("pay bob 5")
    assert suspended.status == "awaiting_approval"
    assert [r.tool_call_id for r in suspended.pending_approvals] == ["c1"]
    assert suspended.pending_approvals[0].arguments == {"to": "bob", "amount": 5}
    assert suspended.state is not None
    saved = run_state_to_json(suspended.state)

    # Another process: a new Agent of the same name, a fresh model, the state from JSON.
    model = ScriptedModel(["Paid bob 5; your balance was 100."])
    ledger2 = Ledger()
    second = Agent("bank", model=model, tools=ledger2.tools())
    state = run_state_from_json(saved)
    resumed = [
        e
        async for e in second.stream(
            state,
            directive=Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=True)]),
        )
    ]
    assert brief(resumed) == [
        "agent.start",
        "tool.approval.resolved transfer#c1 granted",
        "tool.execute.start transfer#c1",
        "tool.execute.end transfer#c1",
        "step.start 2",
        "text.delta 'Paid '",
        "text.delta 'bob '",
        "text.delta '5; '",
        "text.delta 'your '",
        "text.delta 'balance '",
        "text.delta 'was '",
        "text.delta '100.'",
        "text.complete",
        "step.end 2 stop",
        "agent.end completed",
    ]
    assert resumed[0].type == "agent.start"
    assert resumed[0].resumed is True
    # Numbering continues where the suspended run stopped.
    assert resumed[0].seq == suspended.state.last_seq + 1
    assert [e.seq for e in resumed] == list(range(resumed[0].seq, resumed[0].seq + len(resumed)))
    assert {e.run_id for e in resumed} == {suspended.run_id}
    assert ledger2.sent == ["bob:5"]  # exactly once
    # The model's one request holds both results, in the order the calls were made.
    (request,) = model.requests
    tool_messages = [m for m in request.messages if isinstance(m, ToolMessage)]
    assert [(m.tool_call_id, m.content) for m in tool_messages] == [
        ("c1", "sent 5 to bob"),
        ("c2", "100"),
    ]
    # The caller's state object was not modified by the resumed run.
    assert state.status == "awaiting_approval"


async def test_a_denied_call_reaches_the_model_as_an_error_and_never_runs() -> None:
    # covers G-54, C4
    ledger = Ledger()
    suspended = await Agent(
        "bank", model=ScriptedModel(suspending_script()), tools=ledger.tools()
    ).run("pay")
    assert suspended.state is not None
    model = ScriptedModel(["I did not pay bob."])
    agent = Agent("bank", model=model, tools=ledger.tools())
    decision = ApprovalDecision(tool_call_id="c1", granted=False, reason="over the limit")
    events = [
        e
        async for e in agent.stream(
            run_state_from_json(run_state_to_json(suspended.state)),
            directive=Directive(approvals=[decision]),
        )
    ]
    assert brief(events)[:4] == [
        "agent.start",
        "tool.approval.resolved transfer#c1 denied",
        "tool.execute.start transfer#c1",
        "tool.execute.error transfer#c1 approval_denied",
    ]
    assert ledger.sent == []
    tool_messages = [m for m in model.requests[0].messages if isinstance(m, ToolMessage)]
    assert tool_messages[0].content == "Denied: over the limit"
    assert tool_messages[0].is_error


async def test_an_approver_may_edit_the_arguments() -> None:
    # covers G-54
    ledger = Ledger()
    suspended = await Agent(
        "bank", model=ScriptedModel(suspending_script()), tools=ledger.tools()
    ).run("pay")
    assert suspended.state is not None
    agent = Agent("bank", model=ScriptedModel(["ok"]), tools=ledger.tools())
    edited = ApprovalDecision(tool_call_id="c1", granted=True, arguments={"to": "bob", "amount": 3})
    result = await agent.run(suspended.state, directive=Directive(approvals=[edited]))
    assert result.status == "completed"
    assert ledger.sent == ["bob:3"]
    assert [(r.id, r.arguments) for r in result.tool_calls] == [
        ("c1", '{"to":"bob","amount":3}'),
        ("c2", "{}"),
    ]


async def test_directives_that_do_not_match_the_pending_calls_are_refused() -> None:
    # covers G-54
    ledger = Ledger()
    suspended = await Agent(
        "bank", model=ScriptedModel(suspending_script()), tools=ledger.tools()
    ).run("pay")
    state = suspended.state
    assert state is not None
    agent = Agent("bank", model=ScriptedModel(["ok"]), tools=ledger.tools())
    with pytest.raises(UserError, match=r"waits for decisions on call\(s\) \['c1'\]"):
        agent.stream(state, directive=Directive())
    with pytest.raises(UserError, match=r"not pending"):
        agent.stream(
            state,
            directive=Directive(
                approvals=[
                    ApprovalDecision(tool_call_id="c1", granted=True),
                    ApprovalDecision(tool_call_id="zz", granted=True),
                ]
            ),
        )
    other = Agent("other", model=ScriptedModel(["ok"]), tools=ledger.tools())
    with pytest.raises(UserError, match="belongs to agent 'bank'"):
        other.stream(state, directive=Directive())
    with pytest.raises(UserError, match="resumes a suspended run"):
        agent.stream("hi", directive=Directive())
    done = await Agent("bank", model=ScriptedModel(["hi"]), tools=ledger.tools()).run("x")
    assert done.state is not None
    with pytest.raises(UserError, match="only a run awaiting approval"):
        agent.stream(done.state, directive=Directive())
    assert ledger.sent == []


async def test_on_approval_callback_decides_in_line() -> None:
    # covers T-07, C4
    asked: list[ApprovalRequest] = []

    async def approve_small(request: ApprovalRequest, ctx: Any) -> bool:
        asked.append(request)
        amount = request.arguments["amount"]
        return isinstance(amount, int) and amount < 10

    ledger = Ledger()
    model = ScriptedModel(
        [
            Turn(
                tool_calls=[
                    Call("transfer", {"to": "bob", "amount": 5}, id="c1"),
                    Call("transfer", {"to": "eve", "amount": 500}, id="c2"),
                ]
            ),
            "done",
        ]
    )
    agent = Agent(
        "bank",
        model=model,
        tools=ledger.tools(),
        tool_options=ToolOptions(approval=ApprovalConfig(on_approval=approve_small)),
    )
    events = [e async for e in agent.stream("pay")]
    assert brief(events)[8:14] == [
        "tool.approval.requested transfer#c1",
        "tool.approval.resolved transfer#c1 granted",
        "tool.approval.requested transfer#c2",
        "tool.approval.resolved transfer#c2 denied",
        "tool.execute.start transfer#c1",
        "tool.execute.start transfer#c2",
    ]
    assert [r.tool_call_id for r in asked] == ["c1", "c2"]
    assert ledger.sent == ["bob:5"]
    assert events[-1].type == "agent.end"
    assert events[-1].status == "completed"


@pytest.mark.parametrize(
    ("action", "sent", "status"),
    [("deny", [], "completed"), ("approve", ["bob:5"], "completed"), ("raise", [], "failed")],
)
async def test_approval_timeout_actions(action: Any, sent: list[str], status: str) -> None:
    # covers A-28, C4
    never = asyncio.Event()

    async def slow_human(request: ApprovalRequest, ctx: Any) -> bool:
        await never.wait()
        return True

    clock = VirtualClock()
    ledger = Ledger()
    model = ScriptedModel(
        [Turn(tool_calls=[Call("transfer", {"to": "bob", "amount": 5}, id="c1")]), "done"]
    )
    agent = Agent(
        "bank",
        model=model,
        tools=ledger.tools(),
        clock=clock,
        tool_options=ToolOptions(
            approval=ApprovalConfig(on_approval=slow_human, timeout=60, timeout_action=action)
        ),
    )
    events = [e async for e in agent.stream("pay")]
    assert ledger.sent == sent
    assert events[-1].type == "agent.end"
    assert events[-1].status == status
    assert 60 in clock.sleeps
    if action == "raise":
        assert events[-2].type == "agent.error"
        assert "No decision on the call to 'transfer' within 60" in events[-2].message
    else:
        resolved = next(e for e in events if e.type == "tool.approval.resolved")
        assert resolved.timed_out is True
        assert resolved.granted is (action == "approve")


async def test_policy_and_predicates_decide_which_calls_need_approval() -> None:
    # covers T-07, A-28, A-33, C4
    def big(args: dict[str, Any]) -> bool:
        return args["amount"] > 100

    @tool(side_effect_class="side_effecting", needs_approval=big)
    def pay(amount: int) -> str:
        """Pay."""
        return f"paid {amount}"

    @tool(side_effect_class="read_only")
    def lookup(q: str) -> str:
        """Look up."""
        return q

    script = [
        Turn(
            tool_calls=[
                Call("pay", {"amount": 5}, id="small"),
                Call("pay", {"amount": 500}, id="large"),
                Call("lookup", {"q": "x"}, id="look"),
            ]
        )
    ]
    by_predicate = await Agent("a", model=ScriptedModel(script), tools=[pay, lookup]).run("go")
    assert [r.tool_call_id for r in by_predicate.pending_approvals] == ["large"]

    listed = await Agent(
        "a",
        model=ScriptedModel(script),
        tools=[pay, lookup],
        tool_options=ToolOptions(approval=ApprovalConfig(policy=["lookup"])),
    ).run("go")
    assert [r.tool_call_id for r in listed.pending_approvals] == ["large", "look"]

    everything = await Agent(
        "a",
        model=ScriptedModel(script),
        tools=[pay, lookup],
        tool_options=ToolOptions(approval=ApprovalConfig(policy="all")),
    ).run("go")
    assert [r.tool_call_id for r in everything.pending_approvals] == ["small", "large", "look"]


def test_bad_approval_config_is_a_user_error() -> None:
    with pytest.raises(UserError, match="timeout must be > 0"):
        ApprovalConfig(timeout=0)
    with pytest.raises(UserError, match="timeout_action"):
        ApprovalConfig(timeout_action="maybe")  # type: ignore[arg-type]
    with pytest.raises(UserError, match="policy must be"):
        ApprovalConfig(policy="some")


def test_run_state_json_rejects_what_it_cannot_load() -> None:
    # covers D2
    with pytest.raises(UserError, match="invalid JSON"):
        run_state_from_json("{nope")
    with pytest.raises(UserError, match="expected"):
        run_state_from_json("[]")
    with pytest.raises(UserError, match="newer than this Bastion"):
        run_state_from_json(json.dumps({"schema_version": 99, "state": {}}))
    with pytest.raises(UserError, match="Not a valid run state"):
        run_state_from_json(json.dumps({"schema_version": 1, "state": {"run_id": 3}}))


async def test_a_completed_run_state_round_trips_exactly() -> None:
    @tool(side_effect_class="pure")
    # covers G-02, D2
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    model = ScriptedModel(
        [
            Turn(
                tool_calls=[Call("add", {"a": 1, "b": 2})], reasoning="sum", reasoning_signature="s"
            ),
            "3",
        ]
    )
    result = await Agent("a", model=model, tools=[add]).run("1+2", metadata={"k": [1]})
    assert result.state is not None
    text = run_state_to_json(result.state)
    loaded = run_state_from_json(text)
    assert run_state_to_json(loaded) == text
    assert loaded.messages == result.messages
    assert loaded.metadata == {"k": [1]}
    assert loaded.last_seq == result.state.last_seq > 0


async def test_agent_serialize_state_round_trips_and_checks_the_agent() -> None:
    # covers D2: the agent methods beside run_state_to_json / run_state_from_json
    ledger = Ledger()
    bank = Agent("bank", model=ScriptedModel(suspending_script()), tools=ledger.tools())
    suspended = await bank.run("pay bob 5")
    assert suspended.state is not None
    text = bank.serialize_state(suspended.state)
    assert text == run_state_to_json(suspended.state)
    later = Agent("bank", model=ScriptedModel(["Paid."]), tools=ledger.tools())
    state = later.deserialize_state(text)
    assert [p.call.id for p in state.pending_approvals] == ["c1"]
    decided = Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=True)])
    assert (await later.run(state, directive=decided)).text == "Paid."
    with pytest.raises(UserError, match="belongs to agent 'bank', not 'shop'"):
        Agent("shop", model=ScriptedModel([])).deserialize_state(text)


async def test_abort_while_a_human_decides_ends_the_run_and_runs_nothing() -> None:
    # covers G-60
    asking = asyncio.Event()

    async def human(request: ApprovalRequest, ctx: Any) -> bool:
        asking.set()
        await asyncio.Event().wait()  # never decides
        return True

    ledger = Ledger()
    agent = Agent(
        "bank",
        model=ScriptedModel(suspending_script()),
        tools=ledger.tools(),
        tool_options=ToolOptions(approval=ApprovalConfig(on_approval=human)),
    )
    stream = agent.stream("pay")
    seen: list[str] = []

    async def consume() -> None:
        seen.extend([event.type async for event in stream])

    task = asyncio.create_task(consume())
    await asking.wait()
    stream.abort()
    await task
    assert seen[-3:] == ["tool.approval.requested", "agent.cancelling", "agent.end"]
    assert "tool.execute.start" not in seen
    assert "tool.execute.error" not in seen
    assert stream.result.status == "aborted"
    assert ledger.sent == []
    # The conversation still holds a result for every call the model made.
    results = [m for m in stream.result.messages if isinstance(m, ToolMessage)]
    assert [m.tool_call_id for m in results] == ["c1", "c2"]


async def test_a_saved_state_resumed_without_a_directive_stays_suspended() -> None:
    # SPEC §3.1 scenario 9: no directive, no provider call; what waits is reported.
    # covers C4, G-54
    ran: list[str] = []

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def wire(to: str) -> str:
        """Wire money."""
        ran.append(to)
        return f"wired {to}"

    model = ScriptedModel([Turn(tool_calls=[Call("wire", {"to": "bob"}, id="w1")]), "Sent."])
    agent = Agent("bank", model=model, tools=[wire])
    suspended = await agent.run("pay bob")
    assert suspended.status == "awaiting_approval"
    assert suspended.state is not None
    saved = run_state_from_json(run_state_to_json(suspended.state))
    again = await agent.run(saved)
    assert again.status == "awaiting_approval"
    assert [p.tool_call_id for p in again.pending_approvals] == ["w1"]
    assert len(model.requests) == 1
    assert ran == []
    done = await agent.run(
        saved, directive=Directive(approvals=[ApprovalDecision(tool_call_id="w1", granted=True)])
    )
    assert (done.status, done.output, ran) == ("completed", "Sent.", ["bob"])
