"""Approvals bound to the exact call, on SQLite, PostgreSQL and Redis.

An approval carries a digest of (run, call id, tool, canonical arguments); a call changed in
the store after the run suspended, or after the decision was journaled, is refused with
``ApprovalMismatch`` and nothing runs; a decision is consumed once; an approval with edited
arguments runs the edited call once and the transcript carries the edited arguments.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from bastion import Agent, ApprovalConfig, tool
from bastion.agent import ApprovalMismatch, ToolOptions
from bastion.agent._binding import call_digest
from bastion.core import AssistantMessage, RunContext, ToolCall, ToolMessage, new_id
from bastion.stores import NewEntry, open_store
from bastion.testing import Call, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, ApprovalRequest, Directive

from ._backends import store_url, tamper

__all__ = ["store_url"]


def _agent(
    url: str, effects: list[str], *, resumed: bool = False
) -> tuple[Agent[None, str], ScriptedModel]:
    @tool(side_effect_class="side_effecting", needs_approval=True)
    def write_line(text: str) -> str:
        """Append a line."""
        effects.append(text)
        return f"wrote {text!r}"

    first = Turn(tool_calls=[Call("write_line", {"text": "hello"}, id="c1")])
    model = ScriptedModel(["Done."] if resumed else [first, "Done."])
    return Agent("binder", model=model, tools=[write_line], store=url), model


async def _suspended(url: str, effects: list[str]) -> tuple[str, Any]:
    agent, _ = _agent(url, effects)
    try:
        result = await agent.run("Write hello.")
    finally:
        await agent.aclose()
    assert result.status == "awaiting_approval"
    return result.run_id, result


async def _entries(url: str, run_id: str) -> list[Any]:
    async with open_store(url) as stores:
        return await stores.journal.read(run_id)


async def test_an_edited_approval_runs_the_edited_call_once_and_the_model_sees_it(
    store_url: str,
) -> None:
    # covers G-54
    effects: list[str] = []
    run_id, _ = await _suspended(store_url, effects)
    agent, model = _agent(store_url, effects, resumed=True)
    edit = ApprovalDecision(tool_call_id="c1", granted=True, arguments={"text": "bye"})
    try:
        result = await agent.resume(run_id, directive=Directive(approvals=[edit]))
        again = await agent.resume(run_id)  # an ended run: replayed, nothing runs
    finally:
        await agent.aclose()
    assert result.status == again.status == "completed"
    assert effects == ["bye"]
    # The transcript the model read carries the call that ran, and its result.
    [request] = model.requests
    calls = [c for m in request.messages if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [(c.id, json.loads(c.arguments)) for c in calls] == [("c1", {"text": "bye"})]
    assert [m.content for m in request.messages if isinstance(m, ToolMessage)] == ["wrote 'bye'"]
    assert again.messages == result.messages
    entries = await _entries(store_url, run_id)
    [decided] = [e.payload for e in entries if e.kind == "interrupt_decided"]
    approval = decided["approvals"][0]
    original = ToolCall(id="c1", name="write_line", arguments='{"text": "hello"}')
    assert approval["digest"] == call_digest(run_id, original)  # what the human was shown
    assert approval["arguments"] == {"text": "bye"}
    [started] = [e.payload for e in entries if e.kind == "tool_call_started"]
    assert json.loads(started["arguments"]) == {"text": "bye"}


async def test_a_call_changed_in_the_store_after_it_was_decided_is_refused(
    store_url: str,
) -> None:
    # covers G-53
    effects: list[str] = []
    run_id, suspended = await _suspended(store_url, effects)
    call = ToolCall(id="c1", name="write_line", arguments='{"text": "hello"}')
    # The decision is journaled, then the process dies before the call starts.
    decided = {
        "event_seq": 99,
        "approvals": [{"tool_call_id": "c1", "granted": True, "digest": call_digest(run_id, call)}],
        "interrupts": [],
    }
    async with open_store(store_url) as stores:
        last = await stores.journal.last_seq(run_id)
        await stores.journal.append(
            run_id,
            [NewEntry(kind="interrupt_decided", payload=decided)],
            expected_seq=last,
            status="running",
        )
    # Someone changes the call in the suspension's checkpoint.
    raised = [e for e in await _entries(store_url, run_id) if e.kind == "interrupt_raised"][-1]
    payload = json.loads(json.dumps(raised.payload))
    payload["state"]["pending_approvals"][0]["call"]["arguments"] = '{"text": "rm -rf /"}'
    await tamper(store_url, run_id, raised.seq, payload=json.dumps(payload))
    agent, _ = _agent(store_url, effects, resumed=True)
    try:
        with pytest.raises(ApprovalMismatch, match=r"Call 'c1' of run .*rm -rf.* does not match"):
            await agent.resume(run_id)
    finally:
        await agent.aclose()
    assert effects == []
    assert [e.kind for e in await _entries(store_url, run_id)][-1] == "interrupt_decided"
    assert suspended.pending_approvals[0].digest == call_digest(run_id, call)


async def test_an_unchanged_decided_call_runs_once_after_a_crash(store_url: str) -> None:
    effects: list[str] = []
    run_id, suspended = await _suspended(store_url, effects)
    call = ToolCall(id="c1", name="write_line", arguments='{"text": "hello"}')
    decided = {
        "event_seq": 99,
        "approvals": [{"tool_call_id": "c1", "granted": True, "digest": call_digest(run_id, call)}],
        "interrupts": [],
    }
    async with open_store(store_url) as stores:
        last = await stores.journal.last_seq(run_id)
        await stores.journal.append(
            run_id,
            [NewEntry(kind="interrupt_decided", payload=decided)],
            expected_seq=last,
            status="running",
        )
    agent, _ = _agent(store_url, effects, resumed=True)
    try:
        result = await agent.resume(run_id)
    finally:
        await agent.aclose()
    assert result.status == "completed"
    assert effects == ["hello"]
    assert suspended.pending_approvals[0].tool_call_id == "c1"


async def test_a_call_changed_before_the_decision_or_a_stale_digest_is_refused(
    store_url: str,
) -> None:
    effects: list[str] = []
    run_id, suspended = await _suspended(store_url, effects)
    [request] = suspended.pending_approvals
    agent, _ = _agent(store_url, effects, resumed=True)
    stale = ApprovalDecision(tool_call_id="c1", granted=True, digest="0" * 64)
    try:
        with pytest.raises(ApprovalMismatch, match="does not match the decision"):
            await agent.resume(run_id, directive=Directive(approvals=[stale]))
        raised = [e for e in await _entries(store_url, run_id) if e.kind == "interrupt_raised"]
        payload = json.loads(json.dumps(raised[-1].payload))
        payload["state"]["pending_approvals"][0]["call"]["arguments"] = '{"text": "other"}'
        await tamper(store_url, run_id, raised[-1].seq, payload=json.dumps(payload))
        bound = ApprovalDecision(tool_call_id="c1", granted=True, digest=request.digest)
        with pytest.raises(ApprovalMismatch, match="does not match the request"):
            await agent.resume(run_id, directive=Directive(approvals=[bound]))
    finally:
        await agent.aclose()
    assert effects == []
    kinds = [e.kind for e in await _entries(store_url, run_id)]
    assert kinds == ["run_started", "model_response", "interrupt_raised"]


async def test_a_decision_is_consumed_once(store_url: str) -> None:
    effects: list[str] = []
    _, suspended = await _suspended(store_url, effects)
    assert suspended.state is not None
    approve = Directive(approvals=[ApprovalDecision(tool_call_id="c1", granted=True)])
    agent, _ = _agent(store_url, effects, resumed=True)
    try:
        done = await agent.run(suspended.state, directive=approve)
        with pytest.raises(ApprovalMismatch, match="was already resumed"):
            await agent.run(suspended.state, directive=approve)
    finally:
        await agent.aclose()
    assert done.status == "completed"
    assert effects == ["hello"]


async def test_an_edit_given_live_reaches_the_transcript_and_survives_a_replay(
    store_url: str,
) -> None:
    effects: list[str] = []

    @tool(side_effect_class="side_effecting", needs_approval=True)
    def write_line(text: str) -> str:
        """Append a line."""
        effects.append(text)
        return f"wrote {text!r}"

    def edit(request: ApprovalRequest, ctx: RunContext[Any]) -> ApprovalDecision:
        return ApprovalDecision(
            tool_call_id=request.tool_call_id, granted=True, arguments={"text": "bye"}
        )

    first = Turn(tool_calls=[Call("write_line", {"text": "hello"}, id="c1")])
    model = ScriptedModel([first, "Done."])
    approval = ApprovalConfig(on_approval=edit)
    agent = Agent(
        "binder",
        model=model,
        tools=[write_line],
        store=store_url,
        tool_options=ToolOptions(approval=approval),
    )
    try:
        result = await agent.run("Write hello.")
    finally:
        await agent.aclose()
    assert result.status == "completed"
    assert effects == ["bye"]
    sent = model.requests[1].messages
    calls = [c for m in sent if isinstance(m, AssistantMessage) for c in m.tool_calls]
    assert [json.loads(c.arguments) for c in calls] == [{"text": "bye"}]
    # A crash right after the tool's result: the replayed transcript carries the edit too.
    entries = await _entries(store_url, result.run_id)
    cut = [e.kind for e in entries].index("tool_result") + 1
    crashed = new_id("run")
    copied = [NewEntry(kind=e.kind, payload=e.payload) for e in entries[:cut]]
    copied[0].payload["state"]["run_id"] = crashed  # pyright: ignore[reportIndexIssue]
    async with open_store(store_url) as stores:
        await stores.journal.append(crashed, copied, expected_seq=0, agent="binder")
    model2 = ScriptedModel(["Done."])
    resumer = Agent(
        "binder",
        model=model2,
        tools=[write_line],
        store=store_url,
        tool_options=ToolOptions(approval=approval),
    )
    try:
        resumed = await resumer.resume(crashed)
    finally:
        await resumer.aclose()
    assert resumed.status == "completed"
    assert effects == ["bye"]  # not run again
    replayed = [
        c
        for m in model2.requests[0].messages
        if isinstance(m, AssistantMessage)
        for c in m.tool_calls
    ]
    assert [json.loads(c.arguments) for c in replayed] == [{"text": "bye"}]
