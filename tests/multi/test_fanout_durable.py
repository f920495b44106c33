"""Fan-out children as durable child runs: derived run ids, continuing, relayed events.

Each child's run id derives from the fan-out id, its index and its name, so running a
fan-out again finds a child's run in the store and continues it instead of starting over;
the fan-out stream relays each child's events as ``SubagentEvent``s carrying its run id.
(The cross-process crash case is ``tests/durability/test_crash_fanout.py``.)
"""

from __future__ import annotations

import asyncio
import time
from typing import Any

from bastion import Agent, tool
from bastion.agent import RunOptions
from bastion.core import ModelRequest, SubagentEvent, ToolMessage, Usage, UserMessage
from bastion.multi import (
    ChildBudget,
    ChildResult,
    FanOutChildEndEvent,
    FanOutEvent,
    FanOutSpawnedEvent,
    Judge,
    fan_out,
    fan_out_stream,
)
from bastion.multi._fanout_relay import fan_out_child_run_id, judge_run_id
from bastion.stores import DEFAULT_LEASE_TTL, open_store, run_lease_key
from bastion.testing import Call, FunctionModel, LaterClock, ScriptedModel, Turn


def child(name: str, *script: str | Turn, **kwargs: Any) -> Agent[Any, Any]:
    return Agent(name, model=ScriptedModel(list(script), name=name), retry=None, **kwargs)


def requests(agent: Agent[Any, Any]) -> int:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    return len(model.requests)


def lead(**kwargs: Any) -> Agent[Any, Any]:
    return Agent("lead", model=ScriptedModel([]), **kwargs)


def _about(event: FanOutEvent) -> str | None:
    """The child an event is about (``None``: the whole fan-out)."""
    if isinstance(event, SubagentEvent):
        return event.tool_call_id
    if isinstance(event, FanOutSpawnedEvent | FanOutChildEndEvent):
        return event.child
    return None


async def test_each_childs_events_reach_the_stream_as_subagent_events() -> None:
    a = child("a", "alpha")
    b = child("b", "beta")
    events: list[FanOutEvent] = []
    async with fan_out_stream(lead(), [(a, "x"), (b, "y")], fan_out_id="fan-ev") as fan:
        events = [event async for event in fan]
    result = fan.result
    for index, name in enumerate("ab"):
        run_id = fan_out_child_run_id("fan-ev", index, name)
        assert result.child(name).run_id == run_id
        mine = [e for e in events if _about(e) == name]
        kinds = [e.event.type if isinstance(e, SubagentEvent) else e.type for e in mine]
        assert kinds[0] == "agent.fanout.spawned"
        assert kinds[1] == "agent.start"
        assert kinds[-2:] == ["agent.end", "agent.fanout.child.end"]
        relayed = [e for e in mine if isinstance(e, SubagentEvent)]
        assert {(e.run_id, e.agent_name, e.child_run_id, e.ancestry) for e in relayed} == {
            ("fan-ev", name, run_id, ("lead", name))
        }
        assert {e.event.run_id for e in relayed} == {run_id}
    assert events[-1].type == "agent.fanout.merged"


async def test_fan_out_without_a_stream_relays_nothing_to_the_bus() -> None:
    from bastion.core import EventBus

    bus = EventBus()
    seen: list[str] = []
    bus.on("subagent.event", lambda event: seen.append(event.type))
    result = await fan_out(lead(run_options=RunOptions(event_bus=bus)), [(child("a", "x"), "x")])
    assert result.ok
    assert seen == []


async def test_a_rerun_continues_a_child_run_already_in_the_store(tmp_path: Any) -> None:
    # The child's run ended, but the process died before the fan-out journaled its outcome.
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        a = child("a", "alpha")
        b = child("b", "beta")
        run_id = fan_out_child_run_id("fan-2", 0, "a")
        done = await a.with_store(stores).stream("x", run_id=run_id).drain()
        assert done.output == "alpha"
        result = await fan_out(lead(store=stores), [(a, "x"), (b, "y")], fan_out_id="fan-2")
        entries = await stores.journal.read("fan-2")
    assert result.output == "alpha\n\nbeta"
    assert result.child("a").run_id == done.run_id
    assert requests(a) == 1  # its model was asked once, before the re-run
    assert requests(b) == 1
    assert [e.kind for e in entries] == ["run_started", "tool_result", "tool_result", "run_ended"]


async def test_first_success_aborts_siblings_and_their_runs_end_aborted(tmp_path: Any) -> None:
    noted = asyncio.Event()

    @tool(side_effect_class="side_effecting")
    async def note(text: str) -> str:
        """Take a note."""
        noted.set()
        return "noted"

    async def slow(request: ModelRequest) -> str | Turn:
        if not any(isinstance(m, ToolMessage) for m in request.messages):
            return Turn(tool_calls=[Call("note", {"text": "x"}, id="n1")])
        await asyncio.Event().wait()  # cancelled by the winner
        return "too late"

    async def winner(request: ModelRequest) -> str:
        await noted.wait()
        return "first"

    first = Agent("winner", model=FunctionModel(winner))
    sibling = Agent("sibling", model=FunctionModel(slow), tools=[note])
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        result = await fan_out(
            lead(store=stores),
            [(first, "x"), (sibling, "y")],
            merge="first_success",
            fan_out_id="fan-3",
        )
        record = await stores.journal.get_run(fan_out_child_run_id("fan-3", 1, "sibling"))
    assert result.output == "first"
    assert result.child("sibling").status == "aborted"
    assert record is not None
    assert record.status == "aborted"


async def test_a_child_run_live_elsewhere_is_not_journaled_and_continues_later(
    tmp_path: Any,
) -> None:
    run_id = fan_out_child_run_id("fan-4", 0, "a")
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        a = child("a", "alpha", "alpha again")
        await a.with_store(stores).stream("x", run_id=run_id).drain()
        # another process holds the child's run
        await stores.leases.acquire(
            run_lease_key(run_id), "elsewhere", ttl=DEFAULT_LEASE_TTL, now=time.time()
        )
        busy = await fan_out(lead(store=stores), [(a, "x")], fan_out_id="fan-4")
        after_busy = [e.kind for e in await stores.journal.read("fan-4")]
        await stores.leases.release(run_lease_key(run_id), "elsewhere")
        again = await fan_out(lead(store=stores), [(a, "x")], fan_out_id="fan-4")
    error = busy.child("a").error
    assert error is not None
    assert error.code == "run_busy"
    assert after_busy == ["run_started", "run_ended"]  # no outcome journaled for a
    assert again.output == "alpha"  # the same run's result, its model not asked again
    assert again.child("a").status == "completed"
    assert requests(a) == 1


async def test_a_rerun_takes_the_judges_journaled_answers(tmp_path: Any) -> None:
    prompts: list[str] = []

    def judge_answer(request: ModelRequest) -> str:
        last = request.messages[-1]
        assert isinstance(last, UserMessage)
        assert isinstance(last.content, str)
        text = last.content
        prompts.append(text)
        number = 1 if text.index("thorough") < text.index("sloppy") else 2
        return f"The thorough one.\nPICK: {number}"

    judge = Agent("judge", model=FunctionModel(judge_answer))
    a = child("a", "a sloppy answer")
    b = child("b", "a thorough answer")
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        results = [
            await fan_out(
                lead(store=stores),
                [(a, "q"), (b, "q")],
                merge=Judge(judge=judge),
                fan_out_id="fan-5",
            )
            for _ in range(2)
        ]
        runs = [await stores.journal.get_run(judge_run_id("fan-5", n)) for n in (1, 2)]
    assert [(r.output, r.chosen) for r in results] == [("a thorough answer", "b")] * 2
    assert len(prompts) == 2  # the first fan-out asked twice (position check); the re-run, never
    assert [r.agent if r is not None else None for r in runs] == ["judge", "judge"]
    assert requests(a) == requests(b) == 1


def spent(tokens: int) -> Usage:
    return Usage(prompt_tokens=tokens, completion_tokens=0, requests=1)


async def continued_under(budget: ChildBudget, tmp_path: Any) -> tuple[ChildResult, list[str]]:
    """A child whose first attempt ran tool ``one`` (100 tokens), then was cut; the fan-out
    continues its run under ``budget`` (it asks for tool ``two``, 60 tokens, then ends)."""
    notes: list[str] = []
    asked = asyncio.Event()

    @tool(side_effect_class="side_effecting")
    async def note(text: str) -> str:
        """Take a note."""
        notes.append(text)
        return "noted"

    def calls(request: ModelRequest) -> int:
        return sum(isinstance(m, ToolMessage) for m in request.messages)

    async def first(request: ModelRequest) -> Turn:
        if calls(request) == 0:
            return Turn(tool_calls=[Call("note", {"text": "one"}, id="n1")], usage=spent(100))
        asked.set()
        await asyncio.Event().wait()  # the attempt is cut here
        return Turn(text="never")

    def then(request: ModelRequest) -> Turn:
        if calls(request) == 1:
            return Turn(tool_calls=[Call("note", {"text": "two"}, id="n2")], usage=spent(60))
        return Turn(text="done", usage=spent(1))

    run_id = fan_out_child_run_id("fan-6", 0, "worker")
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        cut = Agent("worker", model=FunctionModel(first), tools=[note], store=stores)
        attempt = asyncio.create_task(cut.stream("x", run_id=run_id).drain())
        waiting = asyncio.create_task(asked.wait())
        await asyncio.wait({waiting, attempt}, return_when="FIRST_COMPLETED")
        attempt.cancel()
        await asyncio.gather(attempt, return_exceptions=True)
        # the next attempt comes after the cut attempt's lease lapsed
        later = Agent(
            "worker",
            model=FunctionModel(then),
            tools=[note],
            clock=LaterClock(DEFAULT_LEASE_TTL + 1),
        )
        result = await fan_out(
            lead(store=stores), [(later, "x")], per_child_budget=budget, fan_out_id="fan-6"
        )
    outcome = result.child("worker")
    assert outcome.run_id == run_id
    return outcome, notes


async def test_a_continued_childs_tool_budget_counts_its_earlier_calls(tmp_path: Any) -> None:
    outcome, notes = await continued_under(ChildBudget(tool_calls=1), tmp_path)
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.code == "budget_exceeded"
    assert notes == ["one"]  # the earlier attempt's call counts: the second is refused


async def test_a_continued_childs_token_budget_counts_its_earlier_usage(tmp_path: Any) -> None:
    outcome, notes = await continued_under(ChildBudget(tokens=150), tmp_path)
    assert outcome.status == "failed"
    assert outcome.error is not None
    assert outcome.error.code == "budget_exceeded"
    assert outcome.usage.total_tokens == 161  # 100 before the cut, 61 after
    assert notes == ["one", "two"]
