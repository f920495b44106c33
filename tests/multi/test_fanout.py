"""``Agent.fan_out``: children run concurrently, fail in isolation, stay in budget, merge.

Every child is an Agent on a ScriptedModel / FunctionModel; the assertions are what a user
sees: the events of ``fan_out_stream`` in order, the merged output, each child's outcome,
the summed usage, the runs in the store.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import GovernanceOptions, RunOptions
from bastion.core import ModelRequest, Overloaded, Usage, UserError, UserMessage
from bastion.governance import Limit, Oracle
from bastion.multi import (
    ChildBudget,
    Concat,
    FanOutChild,
    FanOutEvent,
    FanOutResult,
    FirstSuccess,
    fan_out,
    fan_out_stream,
)
from bastion.stores import open_store
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn, VirtualClock


def child(name: str, *script: str | Turn, **kwargs: Any) -> Agent[Any, Any]:
    return Agent(name, model=ScriptedModel(list(script), name=name), retry=None, **kwargs)


def scripted(agent: Agent[Any, Any]) -> ScriptedModel:
    model = agent.config.model
    assert isinstance(model, ScriptedModel)
    return model


def parent(**kwargs: Any) -> Agent[Any, Any]:
    return Agent("lead", model=ScriptedModel([]), **kwargs)


def usage(tokens: int) -> Usage:
    return Usage(prompt_tokens=tokens, completion_tokens=0, requests=1)


async def collect(
    lead: Agent[Any, Any], *args: Any, **kwargs: Any
) -> tuple[list[str], FanOutResult]:
    """The fan-out's own events as lines (the children's events are left out)."""
    async with fan_out_stream(lead, *args, **kwargs) as fan:
        lines = [line(event) async for event in fan if event.type != "subagent.event"]
    return lines, fan.result


def line(event: FanOutEvent) -> str:
    match event.type:
        case "subagent.event":
            return f"{event.tool_call_id}: {event.event.type}"
        case "agent.fanout.spawned":
            return f"spawned {event.child}"
        case "agent.fanout.child.end":
            return f"end {event.child} {event.status}" + (" restored" if event.restored else "")
        case "agent.fanout.merged":
            ok, failed = ",".join(event.succeeded), ",".join(event.failed)
            return f"merged {event.strategy} ok={ok} failed={failed}"


async def test_three_children_concat_and_a_failing_child_is_isolated() -> None:
    # covers G-05, G-79, G-80 (concat; a failing child is isolated: §3.1 scenario 31)
    a = child("a", Turn(text="alpha", usage=usage(10)))
    b = child("b", Turn(error=Overloaded("down")))
    c = child("c", Turn(text="gamma", usage=usage(5)))
    lines, result = await collect(
        parent(), [(a, "one"), (b, "two"), FanOutChild(c, "three")], merge=Concat(separator=" | ")
    )
    assert result.output == "alpha | gamma"
    assert [(x.name, x.status) for x in result.children] == [
        ("a", "completed"),
        ("b", "failed"),
        ("c", "completed"),
    ]
    assert result.child("b").error is not None
    assert result.failed == (result.child("b"),)
    assert result.usage.total_tokens == 15 + result.child("b").usage.total_tokens
    assert result.usage.prompt_tokens >= 15
    assert lines[0] == "spawned a"
    assert sorted(lines[:6]) == sorted(
        [
            "spawned a",
            "spawned b",
            "spawned c",
            "end a completed",
            "end b failed",
            "end c completed",
        ]
    )
    assert lines[-1] == "merged concat ok=a,c failed=b"


async def test_fan_out_run_form_and_default_concat() -> None:
    a = child("a", "first")
    b = child("b", "second")
    result = await fan_out(parent(), [(a, "x"), (b, "y")])
    assert result.ok
    assert result.strategy == "concat"
    assert result.output == "first\n\nsecond"
    last = scripted(a).requests[0].messages[-1]
    assert isinstance(last, UserMessage)
    assert last.content == "x"


async def test_every_child_failing_gives_an_error_not_an_exception() -> None:
    a = child("a", Turn(error=Overloaded("down")))
    result = await fan_out(parent(), [(a, "x")])
    assert not result.ok
    assert result.output is None
    assert result.error is not None
    assert result.error.code == "no_child_succeeded"


async def test_children_run_concurrently_bounded_by_max_concurrent_children() -> None:
    # covers G-79 (bounded fan-out)
    running = 0
    peak = 0
    gate = asyncio.Event()
    arrived = asyncio.Event()

    async def answer(request: ModelRequest) -> str:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        if running == 2:
            arrived.set()
        await gate.wait()
        running -= 1
        return "ok"

    kids = [Agent(f"k{i}", model=FunctionModel(answer)) for i in range(5)]
    task = asyncio.create_task(
        fan_out(parent(), [(k, "go") for k in kids], max_concurrent_children=2)
    )
    await arrived.wait()
    gate.set()
    result = await task
    assert peak == 2
    assert [c.status for c in result.children] == ["completed"] * 5


async def test_first_success_picks_by_registration_order_and_cancels_siblings() -> None:
    # covers G-80 (first_success: registration order; running siblings cancelled)
    slow_started = asyncio.Event()
    never = asyncio.Event()

    async def slow(request: ModelRequest) -> str:
        slow_started.set()
        await never.wait()
        return "too late"

    async def late_winner(request: ModelRequest) -> str:
        await slow_started.wait()
        return "second"

    failing = child("failing", Turn(error=Overloaded("down")))
    winner = Agent("winner", model=FunctionModel(late_winner))
    sibling = Agent("sibling", model=FunctionModel(slow))
    unstarted = child("unstarted", "never asked")
    lines, result = await collect(
        parent(),
        [(failing, "x"), (winner, "x"), (sibling, "x"), (unstarted, "x")],
        merge="first_success",
        max_concurrent_children=2,
    )
    assert result.output == "second"
    assert result.chosen == "winner"
    statuses = {c.name: (c.status, c.error.code if c.error else None) for c in result.children}
    assert statuses == {
        "failing": ("failed", "model_error"),
        "winner": ("completed", None),
        "sibling": ("aborted", "cancelled"),
        "unstarted": ("aborted", "cancelled"),
    }
    assert "spawned unstarted" not in lines
    assert scripted(unstarted).requests == []
    assert lines[-1] == "merged first_success ok=winner failed=failing,sibling,unstarted"


async def test_first_success_waits_for_an_earlier_child() -> None:
    release = asyncio.Event()

    async def first(request: ModelRequest) -> str:
        await release.wait()
        return "first"

    async def quick(request: ModelRequest) -> str:
        release.set()
        return "quick"

    result = await fan_out(
        parent(),
        [
            (Agent("one", model=FunctionModel(first)), "x"),
            (Agent("two", model=FunctionModel(quick)), "x"),
        ],
        merge=FirstSuccess(),
    )
    assert result.output == "first"  # registration order, not finishing order
    assert [c.status for c in result.children] == ["completed", "completed"]


async def test_per_child_duration_budget_is_enforced() -> None:
    # covers G-79 (per-child duration budget)
    clock = VirtualClock(auto_advance=False)
    never = asyncio.Event()

    async def hang(request: ModelRequest) -> str:
        await never.wait()
        return "never"

    quick = Agent("quick", model=ScriptedModel(["fast"]), clock=clock)
    stuck = Agent("stuck", model=FunctionModel(hang), clock=clock)
    task = asyncio.create_task(
        fan_out(
            parent(clock=clock),
            [(quick, "x"), (stuck, "x")],
            per_child_budget=ChildBudget(duration=30),
        )
    )
    await clock.wait_for_sleepers(2)
    clock.advance(29)
    assert not task.done()
    clock.advance(1)
    result = await task
    assert result.output == "fast"
    timed_out = result.child("stuck")
    assert timed_out.status == "failed"
    assert timed_out.error is not None
    assert timed_out.error.code == "budget_exceeded"
    assert "duration (30 s)" in timed_out.error.message


async def test_per_child_tool_call_budget_refuses_the_call_over_it() -> None:
    # covers G-79 (per-child tool-call budget)
    ran: list[str] = []

    @tool(side_effect_class="read_only")
    def look(q: str) -> str:
        """Look."""
        ran.append(q)
        return q

    calls = Turn(
        tool_calls=[Call("look", {"q": "1"}), Call("look", {"q": "2"}), Call("look", {"q": "3"})]
    )
    busy = child("busy", calls, "done", tools=[look])
    calm = child("calm", Turn(tool_calls=[Call("look", {"q": "c"})]), "calm done", tools=[look])
    result = await fan_out(
        parent(), [(busy, "x"), (calm, "x")], per_child_budget=ChildBudget(tool_calls=2)
    )
    assert sorted(ran) == ["1", "2", "c"]
    over = result.child("busy")
    assert over.status == "failed"
    assert over.error is not None
    assert over.error.code == "budget_exceeded"
    assert "tool_calls (3 > 2)" in over.error.message
    assert result.output == "calm done"


async def test_per_child_token_budget_stops_the_child_before_its_next_model_call() -> None:
    # covers G-79 (per-child token budget), usage rolls up
    @tool(side_effect_class="read_only")
    def look(q: str) -> str:
        """Look."""
        return q

    spender = child(
        "spender",
        Turn(tool_calls=[Call("look", {"q": "1"})], usage=usage(600)),
        Turn(tool_calls=[Call("look", {"q": "2"})], usage=usage(600)),
        Turn(text="never reached", usage=usage(600)),
        tools=[look],
    )
    frugal = child("frugal", Turn(text="cheap", usage=usage(100)))
    result = await fan_out(
        parent(), [(spender, "x"), (frugal, "x")], per_child_budget=ChildBudget(tokens=1000)
    )
    over = result.child("spender")
    assert over.status == "failed"
    assert over.error is not None
    assert over.error.code == "budget_exceeded"
    assert scripted(spender).remaining == 1
    assert over.usage.total_tokens == 1200
    assert result.usage.total_tokens == 1300


async def test_custom_merge_function() -> None:
    a = child("a", "3")
    b = child("b", "4")

    async def add(children: Any) -> int:
        return sum(int(c.output) for c in children if c.ok)

    result = await fan_out(parent(), [(a, "x"), (b, "y")], merge=add)
    assert result.output == 7
    assert result.strategy == "custom"


async def test_a_merge_function_that_raises_is_reported() -> None:
    def broken(children: Any) -> str:
        raise ValueError("nope")

    result = await fan_out(parent(), [(child("a", "x"), "x")], merge=broken)
    assert result.error is not None
    assert result.error.code == "merge_failed"


async def test_children_are_governed_by_the_parents_governor() -> None:
    lead = parent(
        governance=GovernanceOptions(
            oracles={"agent:b": Oracle(policies=[Limit(type="calls", max=0)])}
        )
    )
    result = await fan_out(lead, [(child("a", "x"), "x"), (child("b", "never"), "y")])
    assert result.output == "x"
    refused = result.child("b")
    assert refused.status == "failed"
    assert refused.error is not None
    assert refused.error.code == "budget_exceeded"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"children": []}, "non-empty list of children"),
        ({"children": ["x"]}, "child 0 is 'x'"),
        ({"max_concurrent_children": 0}, "max_concurrent_children must be an int >= 1"),
        ({"merge": "judge"}, "merge='judge' needs a judge"),
        ({"merge": "best"}, "Unknown merge strategy 'best'"),
        ({"per_child_budget": {"tokens": 3}}, "per_child_budget must be a ChildBudget"),
    ],
)
def test_bad_options_raise_user_error_before_anything_runs(
    kwargs: dict[str, Any], message: str
) -> None:
    a = child("a", "x")
    options: dict[str, Any] = {"children": [(a, "x")], **kwargs}
    with pytest.raises(UserError, match=message):
        fan_out_stream(parent(), **options)
    assert scripted(a).requests == []


def test_duplicate_child_names_and_bad_budgets_are_refused() -> None:
    a = child("a", "x")
    with pytest.raises(UserError, match="child names must be unique, 'a' repeat"):
        fan_out_stream(parent(), [(a, "x"), (a, "y")])
    with pytest.raises(UserError, match=r"ChildBudget\(tokens=0\)"):
        ChildBudget(tokens=0)


async def test_the_store_holds_the_fan_out_and_each_child_run(tmp_path: Any) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        lead = parent(store=stores)
        a = child("a", "alpha")
        result = await fan_out(lead, [(a, "x")], fan_out_id="fan-1")
        record = await stores.journal.get_run("fan-1")
        entries = await stores.journal.read("fan-1")
        child_run = await stores.journal.get_run(result.child("a").run_id)
    assert record is not None
    assert record.status == "completed"
    assert [e.kind for e in entries] == ["run_started", "tool_result", "run_ended"]
    assert child_run is not None  # the child inherits the parent's store
    assert child_run.agent == "a"


async def test_fan_out_events_reach_the_parents_event_bus() -> None:
    from bastion.core import EventBus

    bus = EventBus()
    seen: list[str] = []
    for kind in ("agent.fanout.spawned", "agent.fanout.child.end", "agent.fanout.merged"):
        bus.on(kind, lambda event: seen.append(event.type))
    await fan_out(parent(run_options=RunOptions(event_bus=bus)), [(child("a", "x"), "x")])
    assert seen == ["agent.fanout.spawned", "agent.fanout.child.end", "agent.fanout.merged"]


async def test_closing_the_stream_early_aborts_the_children() -> None:
    started = asyncio.Event()

    async def hang(request: ModelRequest) -> str:
        started.set()
        await asyncio.Event().wait()
        return "never"

    stuck = Agent("stuck", model=FunctionModel(hang))
    runs: list[str] = []
    async with fan_out_stream(parent(), [(stuck, "x")]) as fan:
        async for event in fan:
            if event.type == "agent.fanout.spawned":
                runs.append(event.run_id)
                await started.wait()
                break
    assert len(runs) == 1
    assert stuck.runs_in_flight == 0


async def test_a_fan_out_id_held_by_another_run_is_refused(tmp_path: Any) -> None:
    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        lead = parent(store=stores)
        run = await child("a", "x", store=stores).run("x")
        before = await stores.journal.read(run.run_id)
        with pytest.raises(UserError, match="is already an agent's run in this store"):
            await fan_out(lead, [(child("b", "y"), "y")], fan_out_id=run.run_id)
        assert await stores.journal.read(run.run_id) == before  # nothing written
