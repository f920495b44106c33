"""Durable runs: the journal a run writes, and resuming it by id (ARCHITECTURE §5: journal,
replay, side-effect ledger).

Crashes are simulated in-process by copying a prefix of an uninterrupted run's journal into
a fresh store and resuming from it; ``tests/durability`` kills real processes.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

import pytest
from pydantic import BaseModel

from bastion import Agent, RunResult, tool
from bastion.core import AgentEvent, ModelRequest, UserError
from bastion.stores import JournalEntry, RunBusy, Stores, open_store
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn
from bastion.tools import ApprovalDecision, Directive, Tool


class World:
    """Counts model calls and real tool executions across agent instances."""

    def __init__(self) -> None:
        self.model_calls = 0
        self.sent: list[str] = []

    def tools(self, *, approval: bool = False) -> list[Tool]:
        world = self

        @tool(side_effect_class="side_effecting", needs_approval=approval)
        def transfer(to: str, amount: int) -> str:
            """Send money."""
            world.sent.append(f"{to}:{amount}")
            return f"sent {amount} to {to}"

        @tool(side_effect_class="read_only")
        def balance() -> int:
            """Read the balance."""
            return 100

        return [transfer, balance]

    def model(self) -> FunctionModel:
        def answer(request: ModelRequest) -> Turn:
            self.model_calls += 1
            turn = sum(m.role == "assistant" for m in request.messages)
            if turn == 0:
                return Turn(
                    tool_calls=[
                        Call("balance", {}, id="c1"),
                        Call("transfer", {"to": "bob", "amount": 5}, id="c2"),
                    ]
                )
            return Turn(text=f"Done after {turn} step(s).")

        return FunctionModel(answer)

    def agent(self, store: Stores, *, approval: bool = False) -> Agent[None, str]:
        return Agent("bank", model=self.model(), tools=self.tools(approval=approval), store=store)


async def _copy(entries: list[JournalEntry], run_id: str) -> Stores:
    stores = open_store("memory://")
    await stores.open()
    for entry in entries:
        await stores.journal.append(
            run_id,
            [_new(entry)],
            expected_seq=entry.seq - 1,
            agent="bank",
        )
    return stores


def _new(entry: JournalEntry) -> Any:
    from bastion.stores import NewEntry

    return NewEntry(kind=entry.kind, payload=entry.payload, schema_version=entry.schema_version)


async def test_entries_carry_the_seq_of_their_events() -> None:
    world = World()
    async with open_store("memory://") as stores:
        stream = world.agent(stores).stream("pay bob")
        events: list[AgentEvent] = [e async for e in stream]
        entries = await stores.journal.read(stream.run_id)
        record = await stores.journal.get_run(stream.run_id)
    by_seq = {e.seq: e for e in events}
    assert [e.kind for e in entries] == [
        "run_started",
        "model_response",
        "tool_call_started",
        "tool_call_started",
        "tool_result",
        "tool_result",
        "model_response",
        "run_ended",
    ]
    expected = {
        "run_started": "agent.start",
        "tool_call_started": "tool.execute.start",
        "tool_result": "tool.execute.end",
        "run_ended": "agent.end",
    }
    for entry in entries:
        event = by_seq[int(entry.payload["event_seq"])]  # pyright: ignore[reportArgumentType]
        if entry.kind in expected:
            assert event.type == expected[entry.kind]
        if "tool_call_id" in entry.payload:
            assert getattr(event, "tool_call_id") == entry.payload["tool_call_id"]  # noqa: B009
    assert record is not None
    assert record.status == "completed"
    assert record.last_seq == len(entries)


async def test_without_a_store_nothing_is_journaled_and_resume_needs_one() -> None:
    agent = Agent("plain", model=ScriptedModel(["hi"]))
    assert agent.config.store is None
    assert (await agent.run("hello")).output == "hi"
    with pytest.raises(UserError, match="has no store"):
        agent.resume_stream("run_x")


async def test_resuming_an_unknown_run_or_another_agents_run_fails() -> None:
    world = World()
    async with open_store("memory://") as stores:
        result = await world.agent(stores).run("pay bob")
        with pytest.raises(UserError, match="No journal for run"):
            await world.agent(stores).resume("run_missing")
        other = Agent("other", model=ScriptedModel(["x"]), store=stores)
        with pytest.raises(UserError, match="belongs to agent 'bank'"):
            await other.resume(result.run_id)


async def test_resuming_an_ended_run_repeats_its_end_without_a_model_call() -> None:
    world = World()
    async with open_store("memory://") as stores:
        first = await world.agent(stores).run("pay bob")
        again = await world.agent(stores).resume(first.run_id)
        events = [e async for e in world.agent(stores).resume_stream(first.run_id)]
    assert world.model_calls == 2
    assert again.status == "completed"
    assert again.output == first.output
    assert again.messages == first.messages
    assert [e.type for e in events] == ["agent.end"]
    assert world.sent == ["bob:5"]


async def test_approval_suspends_into_the_journal_and_resumes_by_id_elsewhere() -> None:
    world = World()
    async with open_store("memory://") as stores:
        suspended = await world.agent(stores, approval=True).run("pay bob")
        assert suspended.status == "awaiting_approval"
        record = await stores.journal.get_run(suspended.run_id)
        assert record is not None
        assert record.status == "awaiting_approval"
        # SPEC §3.1 scenario 9: resumed with no decision, it stays suspended; no model call.
        calls_before = world.model_calls
        waiting = await world.agent(stores, approval=True).resume(suspended.run_id)
        assert waiting.status == "awaiting_approval"
        assert [p.tool_call_id for p in waiting.pending_approvals] == ["c2"]
        assert world.model_calls == calls_before
        directive = Directive(approvals=[ApprovalDecision(tool_call_id="c2", granted=True)])
        done = await world.agent(stores, approval=True).resume(
            suspended.run_id, directive=directive
        )
        kinds = [e.kind for e in await stores.journal.read(suspended.run_id)]
    assert done.status == "completed"
    assert done.output == "Done after 1 step(s)."
    assert world.sent == ["bob:5"]
    assert world.model_calls == 2
    assert kinds[-6:] == [
        "interrupt_raised",
        "interrupt_decided",
        "tool_call_started",
        "tool_result",
        "model_response",
        "run_ended",
    ]


async def test_every_journal_prefix_resumes_to_the_same_output() -> None:
    world = World()
    async with open_store("memory://") as stores:
        reference = await world.agent(stores).run("pay bob")
        entries = await stores.journal.read(reference.run_id)
    for cut in range(1, len(entries) + 1):
        prefix = entries[:cut]
        crashed = World()
        copy = await _copy(prefix, reference.run_id)
        result = await crashed.agent(copy).resume(reference.run_id)
        kinds = [e.kind for e in prefix]
        if result.status == "awaiting_approval":  # transfer started without a result
            assert kinds.count("tool_call_started") > kinds.count("tool_result")
            (request,) = result.pending_approvals
            assert request.tool_name == "transfer"
            assert request.reason is not None
            assert request.reason.startswith("Outcome unknown after crash")
            assert crashed.sent == []
            marked = ApprovalDecision(tool_call_id="c2", granted=True, result="sent 5 to bob")
            result = await crashed.agent(copy).resume(
                reference.run_id, directive=Directive(approvals=[marked])
            )
            assert crashed.sent == []  # marked done by the human: not run again
        assert result.status == "completed", (cut, result.error)
        assert result.output == reference.output
        assert result.messages == reference.messages
        model_responses = kinds.count("model_response")
        assert crashed.model_calls == 2 - model_responses  # recorded calls are never re-sent
        await copy.close()


async def test_outcome_unknown_retry_runs_the_call_again_and_deny_fails_it() -> None:
    world = World()
    async with open_store("memory://") as stores:
        reference = await world.agent(stores).run("pay bob")
        entries = await stores.journal.read(reference.run_id)
    started = [i for i, e in enumerate(entries) if e.kind == "tool_call_started"][-1]
    for granted, sent, text in ((True, ["bob:5"], "sent 5 to bob"), (False, [], "Denied: gone")):
        crashed = World()
        copy = await _copy(entries[: started + 1], reference.run_id)
        held = await crashed.agent(copy).resume(reference.run_id)
        assert held.status == "awaiting_approval"
        decision = ApprovalDecision(tool_call_id="c2", granted=granted, reason="gone")
        result = await crashed.agent(copy).resume(
            reference.run_id, directive=Directive(approvals=[decision])
        )
        assert result.status == "completed"
        assert crashed.sent == sent
        (record,) = [r for r in result.tool_calls if r.id == "c2"]
        assert record.result == text
        await copy.close()


class Answer(BaseModel):
    value: int


async def test_an_output_retry_prompt_is_replayed() -> None:
    script: list[Turn | str] = ['{"value": "nope"}', '{"value": 7}']
    async with open_store("memory://") as stores:
        agent = Agent("bank", model=ScriptedModel(script), output_type=Answer, store=stores)
        reference = await agent.run("give a number")
        entries = await stores.journal.read(reference.run_id)
    assert reference.output == Answer(value=7)
    cut = [i for i, e in enumerate(entries) if e.kind == "model_response"][-1]
    copy = await _copy(entries[: cut + 1], reference.run_id)
    resumed = await Agent("bank", model=ScriptedModel([]), output_type=Answer, store=copy).resume(
        reference.run_id
    )
    assert resumed.output == Answer(value=7)
    assert resumed.messages == reference.messages
    await copy.close()


async def test_two_resumers_of_one_run_one_wins_the_other_fails_cleanly() -> None:
    world = World()
    async with open_store("memory://") as stores:
        reference = await world.agent(stores).run("pay bob")
        entries = await stores.journal.read(reference.run_id)
    copy = await _copy(entries[:2], reference.run_id)  # crashed after the first answer
    crashed = World()
    results = await asyncio.gather(
        crashed.agent(copy).resume(reference.run_id),
        crashed.agent(copy).resume(reference.run_id),
        return_exceptions=True,
    )
    (winner,) = [r for r in results if isinstance(r, RunResult)]
    assert winner.status == "completed"
    (loser,) = [r for r in results if not isinstance(r, RunResult)]
    assert isinstance(loser, RunBusy)  # the loser's lease was refused before it read a row
    assert loser.run_id == reference.run_id
    assert f"Run {reference.run_id!r} is running elsewhere" in str(loser)
    assert crashed.sent == ["bob:5"]  # the transfer ran in the winner only
    kinds = [e.kind for e in await copy.journal.read(reference.run_id)]
    assert kinds == [e.kind for e in entries]
    await copy.close()


async def test_an_answer_ending_inside_a_tool_call_fails_again_on_resume() -> None:
    world = World()
    script = [Turn(tool_calls=[Call("transfer", {"to": "bob", "amount": 5})], unclosed_calls=True)]
    async with open_store("memory://") as stores:
        agent = Agent("bank", model=ScriptedModel(script), tools=world.tools(), store=stores)
        reference = await agent.run("pay bob")
        entries = await stores.journal.read(reference.run_id)
    assert reference.error is not None
    assert reference.error.code == "incomplete_tool_call"
    copy = await _copy(entries[:2], reference.run_id)  # run_started, model_response
    resumed = await world.agent(copy).resume(reference.run_id)
    assert resumed.status == "failed"
    assert resumed.error is not None
    assert resumed.error.code == "incomplete_tool_call"
    assert world.sent == []
    await copy.close()


async def test_a_state_kept_by_the_caller_is_journaled_when_resumed_with_a_store() -> None:
    world = World()
    plain = Agent("bank", model=world.model(), tools=world.tools(approval=True))
    suspended = await plain.run("pay bob")
    assert suspended.status == "awaiting_approval"
    directive = Directive(approvals=[ApprovalDecision(tool_call_id="c2", granted=True)])
    async with open_store("memory://") as stores:
        done = await world.agent(stores, approval=True).run(suspended.state, directive=directive)
        kinds = [e.kind for e in await stores.journal.read(suspended.run_id)]
        again = await world.agent(stores, approval=True).resume(suspended.run_id)
    assert done.status == "completed"
    assert kinds[:2] == ["run_started", "interrupt_decided"]
    assert kinds[-1] == "run_ended"
    assert again.output == done.output
    assert again.messages == done.messages
    assert world.sent == ["bob:5"]


async def test_a_governance_interrupt_resumes_by_id_with_its_counters() -> None:
    from bastion.governance import MutateDecision, decision_from_dict
    from bastion.testing import VirtualClock
    from bastion.tools import InterruptResolution

    from .test_governance import CFO, costly, daily_budget, lookup_tool

    log: list[str] = []

    def analyst(script: list[Turn | str], stores: Stores) -> Agent[Any, Any]:
        return Agent(
            "analyst",
            model=ScriptedModel(script),
            tools=[lookup_tool(log)],
            budget=daily_budget(),
            clock=VirtualClock(),
            store=stores,
        )

    async with open_store("memory://") as stores:
        suspended = await analyst(costly(6, 6)[:2], stores).run("research")
        assert suspended.status == "awaiting_approval"
        assert suspended.state is not None
        [interrupt] = suspended.state.interrupts
        raise_budget = MutateDecision(oracle="llm", limit_type="cost", max=20, approver=CFO)
        resolution = InterruptResolution(interrupt_id=interrupt.id, decision=raise_budget)
        later = analyst([Turn(text="done", usage=suspended.usage)], stores)
        resumed = await later.resume(suspended.run_id, directive=Directive(interrupts=[resolution]))
        entries = await stores.journal.read(suspended.run_id)
    assert resumed.status == "completed"
    assert resumed.output == "done"
    assert resumed.steps == 3
    assert log == ["q1", "q2"]
    [decided] = [e.payload for e in entries if e.kind == "interrupt_decided"]
    journaled = cast("list[dict[str, Any]]", decided["interrupts"])
    assert journaled[0]["interrupt_id"] == interrupt.id
    assert decision_from_dict(journaled[0]["decision"]) == raise_budget
