"""Sub-agents as governed actions on ``agent:<name>`` (issue 5; SPEC L-25, C14).

A parent Agent with governance calls a child made with ``Agent.as_tool``: the call is an
action on ``agent:<child>`` through the parent's governor, and the child's own model and
tool calls go through the same governor one level down (ancestry), so hierarchical
policies, ``max_depth`` and per-invocation limits see the whole tree.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest

from bastion import Agent, GovernanceOptions, tool
from bastion.core import AgentEvent, GovernanceEvent, Message, ToolMessage, Usage, UserError
from bastion.governance import (
    Budget,
    Governor,
    Interrupt,
    InterruptContext,
    Limit,
    MutateDecision,
    PolicyAction,
    PolicyResult,
    allow,
    deny,
    max_depth,
)
from bastion.multi import as_tool
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import ApprovalDecision, Directive, InputAnswer, InterruptResolution


@tool(side_effect_class="read_only")
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def researcher(script: Sequence[Turn | str] | None = None, **kwargs: Any) -> Agent[Any, Any]:
    turns = script if script is not None else ["Researched."]
    return Agent("researcher", model=ScriptedModel(turns, name="small"), tools=[lookup], **kwargs)


def delegate(*inputs: str) -> Turn:
    """A parent turn calling the researcher once per input, in one step."""
    return Turn(
        tool_calls=[
            Call("researcher", {"input": text}, id=f"r{i}") for i, text in enumerate(inputs)
        ]
    )


def results(messages: Sequence[Message]) -> list[str]:
    return [str(m.content) for m in messages if isinstance(m, ToolMessage)]


def child_calls(child: Agent[Any, Any]) -> int:
    model = child.config.model
    assert isinstance(model, ScriptedModel)
    return len(model.requests)


def signals(events: Sequence[AgentEvent]) -> list[str]:
    return [f"{e.signal} {e.data.get('key', '')}" for e in events if isinstance(e, GovernanceEvent)]


# -- a per-agent rate limit: 2 calls a minute on agent:researcher ---------------------------


async def test_two_calls_a_minute_on_agent_researcher_refuses_the_third_until_time_passes() -> None:
    # covers L-10, L-19
    clock = VirtualClock()
    child = researcher(["one", "two", "three"])
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a", "b", "c"), "done", delegate("d"), "done again"]),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={"agent:researcher": [Limit(type="calls", max=2, window="minute")]}
        ),
        clock=clock,
    )
    stream = parent.stream("research three things")
    events = [e async for e in stream]
    assert stream.result.status == "completed"
    assert results(stream.result.messages) == [
        "one",
        "two",
        "Not run: Limit exceeded on 'agent:researcher': calls 2 of 2 (window minute). "
        "Try again later.",
    ]
    assert child_calls(child) == 2  # the third call never started the sub-agent
    assert signals(events).count("oracle.exceeded agent:researcher") == 1

    clock.advance(60)
    again = await parent.run("one more")
    assert results(again.messages) == ["three"]


# -- a forced deny at the `agent` level beats an allow below it ------------------------------


async def test_a_forced_deny_on_agent_blocks_every_sub_agent_whatever_allows_below() -> None:
    # covers L-16, L-20, L-21
    def no_sub_agents(action: PolicyAction) -> PolicyResult:
        return deny("sub-agents are off today", force=True)

    def always(action: PolicyAction) -> PolicyResult:
        return allow(stop=True)

    child = researcher()
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), "I will do it myself."]),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={"agent": [no_sub_agents], "agent:researcher": [always]}
        ),
    )
    events = [e async for e in parent.stream("go")]
    result = events[-1]
    assert result.type == "agent.end"
    assert result.status == "completed"
    assert result.output == "I will do it myself."
    assert child_calls(child) == 0
    errors = [e for e in events if e.type == "tool.execute.error"]
    assert [(e.kind, e.message) for e in errors] == [
        ("approval_denied", "Denied by policy: sub-agents are off today")
    ]


# -- the child's calls are governed one level down -------------------------------------------


async def test_policies_see_the_sub_agents_calls_below_the_parent_in_the_ancestry() -> None:
    # covers L-10, L-22
    seen: list[tuple[str, str, tuple[str, ...], str | None]] = []

    def record(action: PolicyAction) -> None:
        seen.append((action.node, action.oracle, tuple(action.ancestry), action.target))

    child = researcher([Turn(tool_calls=[Call("lookup", {"q": "x"})]), "Researched."])
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), "done"], name="big"),
        tools=[as_tool(child)],
        policies=[record],
    )
    result = await parent.run("go")
    assert result.ok
    assert seen == [
        ("boss", "llm:test:big", (), None),
        ("boss", "agent:researcher", (), "researcher"),
        ("researcher", "llm:test:small", ("boss",), None),
        ("researcher", "tool:lookup", ("boss",), None),
        ("researcher", "llm:test:small", ("boss",), None),
        ("boss", "llm:test:big", (), None),
    ]


async def test_the_parent_stream_shows_the_trees_governance_signals_in_order() -> None:
    child = researcher([Turn(tool_calls=[Call("lookup", {"q": "x"})]), "Researched."])
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), "done"], name="big"),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={
                "llm": [Limit(type="calls", max=100, window="day")],
                "agent": [Limit(type="calls", max=10, window="day")],
            },
            events="all",
        ),  # the routine accumulations too, not only decisions
    )
    events = [e async for e in parent.stream("go")]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert [(e.data["node"], e.data["key"]) for e in events if isinstance(e, GovernanceEvent)] == [
        ("boss", "llm:test:big"),
        ("boss", "agent:researcher"),
        ("researcher", "llm:test:small"),  # the sub-agent's calls, counted in the tree
        ("researcher", "llm:test:small"),
        ("boss", "llm:test:big"),
    ]


async def test_max_depth_stops_a_sub_agent_from_starting_its_own_sub_agent() -> None:
    # covers L-25
    leaf = Agent("fact_checker", model=ScriptedModel(["Checked."], name="tiny"))
    child = Agent(
        "researcher",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("fact_checker", {"input": "check"}, id="f1")]), "Unchecked."],
            name="small",
        ),
        tools=[as_tool(leaf)],
    )
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), "done"]),
        tools=[as_tool(child)],
        policies=[max_depth(1)],
    )
    result = await parent.run("go")
    assert result.ok
    assert results(result.messages) == ["Unchecked."]
    child_model = child.config.model
    assert isinstance(child_model, ScriptedModel)
    refused = child_model.requests[1].messages[-1]
    assert isinstance(refused, ToolMessage)
    assert refused.content == "Denied by policy: max_depth(1): depth 2 is too deep."
    assert child_calls(leaf) == 0


async def test_invocation_limits_count_the_sub_agents_model_calls_with_the_parents() -> None:
    child = researcher(
        [
            Turn(tool_calls=[Call("lookup", {"q": "x"})], usage=Usage(cost_usd=0.8)),
            Turn(text="Researched.", usage=Usage(cost_usd=0.7)),
        ]
    )
    parent = Agent(
        "boss",
        model=ScriptedModel(
            [Turn(tool_calls=[Call("researcher", {"input": "a"})], usage=Usage(cost_usd=0.1))]
        ),
        tools=[as_tool(child)],
        budget=Budget(cost_usd=1.0, window="invocation"),
    )
    result = await parent.run("go")
    # $0.1 + the child's $1.5: the parent's next call would go over; the run fails first.
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "budget_exceeded"
    assert results(result.messages) == ["Researched."]
    assert result.usage.cost_usd == 1.6


async def test_what_a_sub_agent_spends_counts_against_a_cost_limit_on_agent_researcher() -> None:
    child = researcher(
        [Turn(text="expensive", usage=Usage(cost_usd=1.5)), Turn(text="never", usage=Usage())]
    )
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), delegate("b"), "done"]),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={"agent:researcher": [Limit(type="cost", max=1.0, window="day")]}
        ),
    )
    events = [e async for e in parent.stream("go")]
    errors = [e.message for e in events if e.type == "tool.execute.error"]
    assert errors == [
        "Not run: Limit exceeded on 'agent:researcher': cost 1.5 of 1 (window day). "
        "Try again later."
    ]
    assert child_calls(child) == 1


# -- interrupts inside the child follow the parent's handle_interrupt -----------------------


async def test_a_mutable_limit_breached_inside_the_child_is_decided_by_the_parents_handler() -> (
    None
):
    # covers L-24, L-27
    asked: list[Interrupt] = []

    def approve(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        asked.append(interrupt)
        return MutateDecision(oracle="tool:lookup", limit_type="calls", max=5, approver="ops")

    child = researcher(
        [
            Turn(tool_calls=[Call("lookup", {"q": "x"})]),
            Turn(tool_calls=[Call("lookup", {"q": "y"})]),
            "Researched twice.",
        ]
    )
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), "done"]),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={
                "tool:lookup": [Limit(type="calls", max=1, window="minute", mutable={"ops": True})]
            },
            handle_interrupt=approve,
        ),
    )
    result = await parent.run("go")
    assert result.ok
    assert results(result.messages) == ["Researched twice."]
    assert [(i.action, i.node, i.limit_type) for i in asked] == [
        ("tool:lookup", "researcher", "calls")
    ]


async def test_an_interrupt_in_the_child_nobody_handles_parks_the_parent_until_decided() -> None:
    # covers G-56
    child = researcher(
        [
            Turn(tool_calls=[Call("lookup", {"q": "x"})]),
            Turn(tool_calls=[Call("lookup", {"q": "y"})]),
            "Researched twice.",
        ]
    )
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), "done"]),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={
                "tool:lookup": [Limit(type="calls", max=1, window="minute", mutable={"ops": True})]
            }
        ),
    )
    parked = await parent.run("go")
    assert parked.status == "awaiting_approval"
    [request] = parked.pending_approvals
    assert request.input is not None
    [interrupt] = request.input.context["interrupts"]
    assert interrupt["reason"].startswith("calls limit on 'tool:lookup' reached: 1 of 1")
    assert parked.state is not None
    plain = Directive(approvals=[ApprovalDecision(tool_call_id=request.tool_call_id, granted=True)])
    with pytest.raises(UserError, match="waits on interrupt"):
        await parent.run(parked.state, directive=plain)
    raised = {"decision": "mutate", "oracle": "tool:lookup", "limit_type": "calls", "max": 2}
    answer = InputAnswer(
        tool_call_id=request.tool_call_id,
        content={"interrupts": [{"interrupt_id": interrupt["id"], "decision": raised}]},
    )
    result = await parent.run(parked.state, directive=Directive(inputs=[answer]))
    assert result.ok
    assert results(result.messages) == ["Researched twice."]


async def test_a_mutable_limit_on_agent_researcher_suspends_the_parent_until_decided() -> None:
    # covers L-24, L-27
    ops = "human:ops"
    child = researcher(["first", "second"])
    parent = Agent(
        "boss",
        model=ScriptedModel([delegate("a"), delegate("b"), "done"]),
        tools=[as_tool(child)],
        governance=GovernanceOptions(
            oracles={
                "agent:researcher": [
                    Limit(type="calls", max=1, window="day", mutable={ops: True}),
                ]
            }
        ),
    )
    held = await parent.run("go")
    assert held.status == "awaiting_approval"  # the second delegation waits for a human
    assert held.state is not None
    [interrupt] = held.state.interrupts
    assert (interrupt.interrupt.action, interrupt.on) == ("agent:researcher", "tool")
    assert child_calls(child) == 1
    decision = MutateDecision(oracle="agent:researcher", limit_type="calls", max=2, approver=ops)
    resumed = await parent.run(
        held.state,
        directive=Directive(
            interrupts=[InterruptResolution(interrupt_id=interrupt.id, decision=decision)]
        ),
    )
    assert resumed.status == "completed"
    assert results(resumed.messages) == ["first", "second"]


def test_a_governed_parent_refuses_a_child_with_another_governor() -> None:
    child = researcher(governance=GovernanceOptions(governor=Governor()))
    with pytest.raises(UserError, match="have different governors"):
        Agent(
            "boss",
            model=ScriptedModel([]),
            tools=[as_tool(child)],
            governance=GovernanceOptions(governor=Governor()),
        )
    shared = Governor()
    Agent(
        "boss",
        model=ScriptedModel([]),
        tools=[as_tool(researcher(governance=GovernanceOptions(governor=shared)))],
        governance=GovernanceOptions(governor=shared),
    )
