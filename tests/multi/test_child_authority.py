"""Least authority for sub-agents: what a parent grants its child through ``as_tool``.

A read-only child is not shown its writer tools, and a writer call it makes anyway is
refused with ``capability_blocked``; a child gets only the parent's secrets the parent
names, in the mode it names; the child's events carry its run id and ancestry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import BudgetSlice
from bastion.core import SubagentEvent, ToolExecuteErrorEvent, ToolMessage, Usage, UserError
from bastion.multi import as_tool
from bastion.security import SecretAccessError, SecretRef, SecurityConfig, Vault, callable_secret
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import Tool

ran: list[str] = []


@tool(side_effect_class="read_only")
def read_file(path: str) -> str:
    """Read a file."""
    ran.append(f"read {path}")
    return f"contents of {path}"


@tool(side_effect_class="side_effecting")
def write_file(path: str, text: str) -> str:
    """Write a file."""
    ran.append(f"write {path}")
    return "written"


def boss(tools: Sequence[Tool], *, security: SecurityConfig | None = None) -> Agent[Any, Any]:
    script = [Turn(tool_calls=[Call("worker", {"input": "tidy"}, id="c1")]), "ok"]
    return Agent("boss", model=ScriptedModel(script), tools=tools, security=security)


def results(messages: Sequence[Any]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


async def test_a_read_only_child_is_not_shown_writers_and_a_fabricated_writer_call_is_blocked() -> (
    None
):
    # covers §3.1 scenario 35 (writers not advertised; a fabricated writer call is blocked)
    ran.clear()
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("write_file", {"path": "a", "text": "x"}, id="w1")]),
            Turn(tool_calls=[Call("read_file", {"path": "a"}, id="r1")]),
            "Read it.",
        ]
    )
    child = Agent("worker", model=model, tools=[read_file, write_file])
    parent = boss([as_tool(child, capability="read_only")])
    events = [e async for e in parent.stream("go")]
    shown = [d.name for d in model.requests[0].tools]
    assert shown == ["read_file"]  # the writer is not advertised
    assert ran == ["read a"]  # the fabricated writer call did not run
    errors = [
        e.event
        for e in events
        if isinstance(e, SubagentEvent) and isinstance(e.event, ToolExecuteErrorEvent)
    ]
    [blocked] = errors
    assert (blocked.tool_name, blocked.kind) == ("write_file", "capability_blocked")
    # The child's model read the refusal as a tool error, then went on.
    [refusal] = [m for m in model.requests[1].messages if isinstance(m, ToolMessage)]
    assert refusal.is_error
    assert "runs read-only" in str(refusal.content)


async def test_a_full_capability_child_keeps_its_writers() -> None:
    ran.clear()
    model = ScriptedModel(
        [Turn(tool_calls=[Call("write_file", {"path": "a", "text": "x"}, id="w1")]), "Wrote."]
    )
    child = Agent("worker", model=model, tools=[read_file, write_file])
    result = await boss([as_tool(child)]).run("go")
    assert sorted(d.name for d in model.requests[0].tools) == ["read_file", "write_file"]
    assert ran == ["write a"]
    assert results(result.messages) == ["Wrote."]


async def test_an_agent_can_be_read_only_itself() -> None:
    ran.clear()
    model = ScriptedModel(
        [Turn(tool_calls=[Call("write_file", {"path": "a", "text": "x"}, id="w1")]), "No."]
    )
    agent = Agent("worker", model=model, tools=[read_file, write_file], capability="read_only")
    result = await agent.run("go")
    assert [d.name for d in model.requests[0].tools] == ["read_file"]
    assert ran == []
    [record] = result.tool_calls
    assert record.error_kind == "capability_blocked"
    again = ScriptedModel(["Nothing to write."])
    narrowed_twice = Agent(
        "worker", model=again, tools=[read_file, write_file], capability="read_only"
    )
    result = await boss([as_tool(narrowed_twice, capability="read_only")]).run("go")
    assert results(result.messages) == ["Nothing to write."]
    assert [d.name for d in again.requests[0].tools] == ["read_file"]


def test_an_unknown_capability_is_refused() -> None:
    child = Agent("worker", model=ScriptedModel(["x"]))
    with pytest.raises(UserError, match="capability must be one of 'full', 'read_only'"):
        as_tool(child, capability="write")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="capability must be one of 'full', 'read_only'"):
        Agent("worker", model=ScriptedModel(["x"]), capability="write")  # pyright: ignore[reportArgumentType]


# -- secrets ------------------------------------------------------------------------------

rotating = {"stripe": "sk-live-0001"}
seen: list[str] = []


@tool(side_effect_class="read_only", secrets_allowed=["stripe"])
def charge() -> str:
    """Use the stripe key (the parent's source rotates after each read)."""
    try:
        key = SecretRef("stripe").reveal()
    except SecretAccessError:
        seen.append("no access")
        raise
    seen.append(key[-4:])
    rotating["stripe"] = "sk-live-0002"
    return "charged"


def parent_security() -> SecurityConfig:
    vault = Vault({"stripe": callable_secret(lambda: rotating["stripe"])})
    return SecurityConfig(vault=vault)


def billing(**grant: Any) -> Tool:
    twice = Turn(tool_calls=[Call("charge", {}, id="k1"), Call("charge", {}, id="k2")])
    child = Agent("worker", model=ScriptedModel([twice, "Charged."]), tools=[charge])
    return as_tool(child, **grant)


async def keys_seen(tool: Tool) -> list[str]:
    rotating["stripe"] = "sk-live-0001"
    seen.clear()
    result = await boss([tool], security=parent_security()).run("go")
    assert result.ok
    return seen


async def test_by_default_a_child_inherits_no_secret() -> None:
    # covers G-57
    assert await keys_seen(billing()) == ["no access", "no access"]
    assert await keys_seen(billing(secrets="inherit_allowlist")) == ["no access", "no access"]


async def test_inherit_allowlist_gives_the_named_secrets_as_they_rotate() -> None:
    # covers G-57
    assert await keys_seen(billing(inherit_secrets=["stripe"])) == ["0001", "0002"]


async def test_forward_explicit_gives_the_values_at_hand_over() -> None:
    # covers G-57
    tool = billing(secrets="forward_explicit", inherit_secrets=["stripe"])
    assert await keys_seen(tool) == ["0001", "0001"]


async def test_isolated_gives_nothing_of_the_parents() -> None:
    # covers G-57
    assert await keys_seen(billing(secrets="isolated")) == ["no access", "no access"]
    with pytest.raises(UserError, match="'isolated' grants nothing"):
        billing(secrets="isolated", inherit_secrets=["stripe"])


async def test_a_grant_the_parent_cannot_make_is_a_tool_error_for_its_model() -> None:
    seen.clear()
    result = await boss([billing(inherit_secrets=["stripe"])]).run("go")  # no parent vault
    [message] = [m for m in result.messages if isinstance(m, ToolMessage)]
    assert message.is_error
    assert "has no vault" in str(message.content)
    assert seen == []  # the child never started


def test_bad_secret_grants_are_refused_before_anything_runs() -> None:
    with pytest.raises(UserError, match="secrets must be one of"):
        billing(secrets="inherit")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="inherit_secrets must be a list"):
        billing(inherit_secrets="stripe")
    own = Agent(
        "worker",
        model=ScriptedModel(["x"]),
        security=SecurityConfig(vault=Vault({"stripe": "sk-own-9999"})),
    )
    with pytest.raises(UserError, match="has its own vault"):
        as_tool(own, inherit_secrets=["stripe"])


# -- events -------------------------------------------------------------------------------


async def test_forwarded_events_carry_the_child_run_and_its_ancestry() -> None:
    leaf = Agent("leaf", model=ScriptedModel(["Leaf done."]))
    middle = Agent(
        "worker",
        model=ScriptedModel([Turn(tool_calls=[Call("leaf", {"input": "x"}, id="l1")]), "Mid."]),
        tools=[as_tool(leaf)],
    )
    events = [e async for e in boss([as_tool(middle)]).stream("go")]
    wrapped = [e for e in events if isinstance(e, SubagentEvent)]
    first = wrapped[0]
    assert (first.agent_name, first.ancestry, first.child_run_id) == (
        "worker",
        ("boss", "worker"),
        first.event.run_id,
    )
    nested = [e.event for e in wrapped if isinstance(e.event, SubagentEvent)]
    assert nested
    assert {(n.agent_name, n.ancestry) for n in nested} == {("leaf", ("boss", "worker", "leaf"))}
    assert nested[0].child_run_id != first.child_run_id


# -- budget slices ------------------------------------------------------------------------


def spending(turns: int, tokens: int) -> ScriptedModel:
    """A child model: ``turns`` tool-calling turns of ``tokens`` tokens each, then an answer."""
    used = Usage(prompt_tokens=tokens // 2, completion_tokens=tokens - tokens // 2, requests=1)
    script: list[Turn | str] = [
        Turn(text=f"step {i}", tool_calls=[Call("read_file", {"path": f"f{i}"})], usage=used)
        for i in range(turns)
    ]
    return ScriptedModel([*script, Turn(text="Done.", usage=used)], name="small")


async def test_a_spent_token_slice_stops_the_child_and_its_usage_rolls_up_by_model() -> None:
    # covers G-56
    ran.clear()
    child = Agent("worker", model=spending(4, 100), tools=[read_file])
    tool = as_tool(child, budget=BudgetSlice(tokens=150))
    parent = Agent(
        "boss",
        model=ScriptedModel([Turn(tool_calls=[Call("worker", {"input": "go"}, id="c1")]), "ok"]),
        tools=[tool],
    )
    result = await parent.run("go")
    assert ran == ["read f0", "read f1"]  # two model calls (200 tokens), then no third
    [message] = results(result.messages)
    assert message == "step 1\n\n(Sub-agent 'worker' stopped early: budget: tokens (200 of 150).)"
    assert result.usage_by_model["test:small"].total_tokens == 200
    assert set(result.usage_by_model) == {"test:small", "test:scripted"}


async def test_a_tool_call_slice_refuses_the_calls_beyond_it() -> None:
    ran.clear()
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("read_file", {"path": "a"}), Call("read_file", {"path": "b"})]),
            "never asked",
        ]
    )
    child = Agent("worker", model=model, tools=[read_file])
    result = await boss([as_tool(child, budget=BudgetSlice(tool_calls=1))]).run("go")
    assert ran == ["read a"]
    assert len(model.requests) == 1  # the slice is spent: no further model call
    [message] = results(result.messages)
    assert message.endswith("(Sub-agent 'worker' stopped early: budget: tool calls (2 of 1).)")


async def test_a_duration_slice_is_measured_on_the_agents_clock() -> None:
    clock = VirtualClock(auto_advance=False)

    @tool(side_effect_class="read_only")
    async def slow() -> str:
        """Take a minute."""
        await clock.sleep(60)
        return "slow done"

    model = ScriptedModel([Turn(tool_calls=[Call("slow", {})]), "never asked"])
    child = Agent("worker", model=model, tools=[slow], clock=clock)
    task = boss([as_tool(child, budget=BudgetSlice(duration=30))]).run("go")
    runner = asyncio.ensure_future(task)
    await clock.wait_for_sleepers(1)
    clock.advance(60)
    result = await runner
    [message] = results(result.messages)
    assert message.endswith("stopped early: budget: duration (30 s).)")
    assert len(model.requests) == 1


def test_a_budget_slice_must_be_non_negative_numbers() -> None:
    with pytest.raises(UserError, match=r"BudgetSlice\.tokens must be a number >= 0"):
        BudgetSlice(tokens=-1)
    with pytest.raises(UserError, match=r"BudgetSlice\.duration"):
        BudgetSlice(duration=float("nan"))
    child = Agent("worker", model=ScriptedModel(["x"]))
    with pytest.raises(UserError, match="budget must be a BudgetSlice"):
        as_tool(child, budget={"tokens": 5})  # pyright: ignore[reportArgumentType]
