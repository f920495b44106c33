"""Handoffs: ``transfer_to_<name>`` tools that make another agent the run's active agent."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from bastion import Agent, GovernanceOptions, Session, filters, handoff, tool
from bastion.agent import AgentRegistry, RunOptions, handoff_of, run_state_to_json
from bastion.context import SUMMARY_HEADER
from bastion.core import (
    AgentEvent,
    HandoffEvent,
    ReasoningPart,
    SystemMessage,
    ToolMessage,
    UserError,
    UserMessage,
)
from bastion.governance import Governor, PolicyAction, PolicyResult, deny
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock, isolated_store
from bastion.tools import ApprovalDecision, Deny, Directive

from .conftest import brief


@tool(side_effect_class="read_only")
def order_status(order: str) -> str:
    """Look up an order."""
    return f"order {order}: shipped"


def _billing(script: list[Turn | str], **options: Any) -> Agent[Any, Any]:
    return Agent(
        "billing",
        model=ScriptedModel(script, name="billing-model"),
        instructions="You are the billing desk.",
        tools=[order_status],
        description="Answers billing questions.",
        clock=VirtualClock(),
        **options,
    )


def _transfer(target: str = "billing", call_id: str = "h1", **args: Any) -> Turn:
    return Turn(tool_calls=[Call(f"transfer_to_{target}", args, id=call_id)])


async def _events(agent: Agent[Any, Any], text: str) -> list[AgentEvent]:
    return [event async for event in agent.stream(text)]


async def test_a_transfer_runs_the_target_with_its_instructions_tools_and_model() -> None:
    # covers G-22
    billing = _billing(
        [Turn(tool_calls=[Call("order_status", {"order": "A1"}, id="s1")]), "Shipped."]
    )
    triage_model = ScriptedModel([_transfer(reason="billing question")], name="triage-model")
    triage = Agent(
        "triage",
        model=triage_model,
        instructions="Route the user.",
        handoffs=[billing],
        clock=VirtualClock(),
    )
    assert [d.name for d in triage.config.tools.advertised] == ["transfer_to_billing"]
    assert "Answers billing questions." in triage.config.tools.advertised[0].description

    stream = triage.stream("Where is order A1?")
    events = [event async for event in stream]
    result = stream.result

    assert brief(events) == [
        "agent.start",
        "step.start 1",
        "tool.call.start transfer_to_billing#h1",
        "tool.call.delta",
        "tool.call.end transfer_to_billing#h1",
        "tool.execute.start transfer_to_billing#h1",
        "tool.execute.end transfer_to_billing#h1",
        "step.end 1 tool_calls",
        "agent.handoff",
        "step.start 2",
        "tool.call.start order_status#s1",
        "tool.call.delta",
        "tool.call.end order_status#s1",
        "tool.execute.start order_status#s1",
        "tool.execute.end order_status#s1",
        "step.end 2 tool_calls",
        "step.start 3",
        "text.delta 'Shipped.'",
        "text.complete",
        "step.end 3 stop",
        "agent.end completed",
    ]
    moved = next(e for e in events if isinstance(e, HandoffEvent))
    assert (moved.from_agent, moved.to_agent, moved.tool_call_id) == ("triage", "billing", "h1")
    assert moved.arguments == {"reason": "billing question"}
    assert moved.input_filter == filters.descriptor_adapter().dump_python(
        filters.default_handoff_filter(), mode="json"
    )
    # The target's model answers from its own instructions and is offered its own tools.
    billing_model = billing.config.model
    assert isinstance(billing_model, ScriptedModel)
    first = billing_model.requests[0]
    assert first.messages[0] == SystemMessage(content="You are the billing desk.")
    assert [t.name for t in first.tools] == ["order_status"]
    assert len(triage_model.requests) == 1
    # Attribution: the answer is billing's, on its model; the run is still triage's.
    assert result.output == "Shipped."
    assert (result.agent_name, result.last_agent) == ("triage", "billing")
    assert set(result.usage_by_model) == {"test:triage-model", "test:billing-model"}
    assert [m.content for m in result.messages if isinstance(m, SystemMessage)] == [
        "You are the billing desk."
    ]


async def test_chained_handoffs_end_with_the_last_target() -> None:
    # covers C14
    refunds = Agent(
        "refunds", model=ScriptedModel(["Refunded."]), instructions="Refunds.", clock=VirtualClock()
    )
    # the same call id twice (as scripted models and some vendors do): both hand off
    billing = _billing([_transfer("refunds", "h1")], handoffs=[refunds])
    triage = Agent(
        "triage", model=ScriptedModel([_transfer()]), handoffs=[billing], clock=VirtualClock()
    )
    stream = triage.stream("Refund me.")
    events = [event async for event in stream]
    moves = [(e.from_agent, e.to_agent) for e in events if isinstance(e, HandoffEvent)]
    assert moves == [("triage", "billing"), ("billing", "refunds")]
    assert stream.result.output == "Refunded."
    assert stream.result.last_agent == "refunds"
    assert stream.result.state is not None
    assert stream.result.state.handoffs == 2


async def test_targets_named_in_a_registry_may_hand_back() -> None:
    agents = AgentRegistry()
    triage = agents.add(
        Agent(
            "triage",
            model=ScriptedModel([_transfer(), "Back at triage: anything else?"]),
            instructions="Route.",
            handoffs=["billing"],
            clock=VirtualClock(),
            run_options=RunOptions(agent_registry=agents),
        )
    )
    agents.add(
        _billing(
            [_transfer("triage", "h2")],
            handoffs=["triage"],
            run_options=RunOptions(agent_registry=agents),
        )
    )
    result = await triage.run("Hi")
    assert result.output == "Back at triage: anything else?"
    assert result.last_agent == "triage"
    assert result.state is not None
    assert result.state.active_agent is None


async def test_an_unknown_target_fails_the_run_before_any_tool_runs() -> None:
    calls: list[str] = []
    agents = AgentRegistry()
    triage = Agent(
        "triage",
        model=ScriptedModel([_transfer("ghost")]),
        handoffs=[handoff("ghost", on_handoff=lambda ctx, _: calls.append("ran"))],
        clock=VirtualClock(),
        run_options=RunOptions(agent_registry=agents),
    )
    result = await triage.run("Hi")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "handoff_unknown_target"
    assert "'ghost' is not in the agent registry" in result.error.message
    assert calls == []


def test_bad_handoff_configurations_raise_at_construction() -> None:
    model = ScriptedModel([])
    with pytest.raises(UserError, match="agent_registry"):
        Agent("triage", model=model, handoffs=["billing"])
    with pytest.raises(UserError, match="cannot hand off to itself"):
        Agent(
            "triage",
            model=model,
            handoffs=["triage"],
            run_options=RunOptions(agent_registry=AgentRegistry()),
        )
    with pytest.raises(UserError, match="max_handoffs"):
        Agent("triage", model=model, run_options=RunOptions(max_handoffs=0))
    with pytest.raises(UserError, match="input_filter"):
        handoff("billing", input_filter=print)  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="input_type"):
        handoff("billing", input_type=dict)  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="another agent named"):
        AgentRegistry([_billing([]), _billing([])])


async def test_exceeding_max_handoffs_fails_the_run() -> None:
    # covers C14
    agents = AgentRegistry()
    triage = agents.add(
        Agent(
            "triage",
            model=ScriptedModel([_transfer(), _transfer("billing", "h3")]),
            handoffs=["billing"],
            clock=VirtualClock(),
            run_options=RunOptions(agent_registry=agents, max_handoffs=2),
        )
    )
    agents.add(
        _billing(
            [_transfer("triage", "h2")],
            handoffs=["triage"],
            run_options=RunOptions(agent_registry=agents),
        )
    )
    events = await _events(triage, "Hi")
    assert [e.to_agent for e in events if isinstance(e, HandoffEvent)] == ["billing", "triage"]
    assert brief(events)[-2:] == ["agent.error max_handoffs", "agent.end failed"]
    assert "max_handoffs=2" in next(e.message for e in events if e.type == "agent.error")


async def test_a_policy_can_deny_the_transfer() -> None:
    def no_billing(action: PolicyAction) -> PolicyResult:
        return deny("billing is closed today")

    billing = _billing([])
    triage = Agent(
        "triage",
        model=ScriptedModel([_transfer(), "Billing is closed; try tomorrow."]),
        handoffs=[billing],
        governance=GovernanceOptions(oracles={"tool:transfer_to_billing": [no_billing]}),
        clock=VirtualClock(),
    )
    events = await _events(triage, "Hi")
    assert not any(isinstance(e, HandoffEvent) for e in events)
    end = events[-1]
    assert end.type == "agent.end"
    assert end.output == "Billing is closed; try tomorrow."
    assert isinstance(billing.config.model, ScriptedModel)
    assert billing.config.model.requests == []


class Escalation(BaseModel):
    ticket: int
    summary: str


async def test_input_type_is_validated_and_given_to_on_handoff() -> None:
    seen: list[tuple[str, Escalation]] = []

    async def on_handoff(ctx: Any, escalation: Escalation) -> None:
        seen.append((ctx.agent_name, escalation))

    billing = _billing(["Ticket 7 is with billing."])
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [
                _transfer("billing", "bad", ticket="seven"),
                _transfer("billing", "good", ticket=7, summary="double charge"),
            ]
        ),
        handoffs=[handoff(billing, input_type=Escalation, on_handoff=on_handoff)],
        clock=VirtualClock(),
    )
    events = await _events(triage, "I was charged twice")
    errors = [e for e in events if e.type == "tool.execute.error"]
    assert [(e.tool_call_id, e.kind) for e in errors] == [("bad", "invalid_input")]
    assert seen == [("triage", Escalation(ticket=7, summary="double charge"))]
    moved = next(e for e in events if isinstance(e, HandoffEvent))
    assert moved.arguments == {"ticket": 7, "summary": "double charge"}
    end = events[-1]
    assert end.type == "agent.end"
    assert end.output == "Ticket 7 is with billing."


async def test_one_answer_makes_one_handoff() -> None:
    refunds = Agent("refunds", model=ScriptedModel([]), clock=VirtualClock())
    billing = _billing(["Billing here."])
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [
                Turn(
                    tool_calls=[
                        Call("transfer_to_billing", {}, id="h1"),
                        Call("transfer_to_refunds", {}, id="h2"),
                    ]
                )
            ]
        ),
        handoffs=[billing, refunds],
        clock=VirtualClock(),
    )
    stream = triage.stream("Hi")
    events = [event async for event in stream]
    assert [e.to_agent for e in events if isinstance(e, HandoffEvent)] == ["billing"]
    results = {m.tool_call_id: m for m in stream.result.messages if isinstance(m, ToolMessage)}
    assert results["h2"].is_error
    assert "one answer makes one handoff" in results["h2"].text


async def test_the_input_filter_shapes_what_the_target_sees_and_reasoning_never_crosses() -> None:
    # covers G-64
    billing = _billing(["Noted."])
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [
                Turn(text="Hmm.", reasoning="private thoughts", reasoning_signature="s"),
                Turn(
                    reasoning="more private thoughts",
                    tool_calls=[Call("transfer_to_billing", {}, id="h1")],
                ),
            ]
        ),
        instructions="Route.",
        handoffs=[handoff(billing, input_filter=filters.last_n(3))],
        clock=VirtualClock(),
    )
    first = await triage.run("first")
    await triage.run("second", message_history=first.messages)
    assert isinstance(billing.config.model, ScriptedModel)
    sent = billing.config.model.requests[0].messages
    assert sent[0] == SystemMessage(content="You are the billing desk.")
    assert [type(m).__name__ for m in sent[1:]] == [
        "UserMessage",
        "AssistantMessage",
        "ToolMessage",
    ]
    assert not any(isinstance(p, ReasoningPart) for m in sent for p in getattr(m, "parts", ()))


async def test_a_summary_filter_is_a_governed_model_call_of_the_run() -> None:
    # covers G-58
    calls: list[str] = []

    def count(action: PolicyAction) -> None:
        calls.append(action.oracle)

    triage_model = ScriptedModel(
        [
            Turn(tool_calls=[Call("order_status", {"order": "A1"}, id="s1")]),
            "It shipped.",
            _transfer(),
            "The user asked about order A1, which shipped.",  # the summary
        ],
        name="triage-model",
    )
    billing = _billing(["I see A1 shipped; how can billing help?"])
    triage = Agent(
        "triage",
        model=triage_model,
        tools=[order_status],
        handoffs=[handoff(billing, input_filter=filters.summary(keep_last=0))],
        governance=GovernanceOptions(oracles={"llm": [count]}),
        clock=VirtualClock(),
    )
    first = await triage.run("Where is A1?")
    calls.clear()
    result = await triage.run("Now a billing question.", message_history=first.messages)
    assert result.status == "completed", result.error
    assert isinstance(billing.config.model, ScriptedModel)
    sent = billing.config.model.requests[0].messages
    assert sent == [
        SystemMessage(content="You are the billing desk."),
        UserMessage(content=f"{SUMMARY_HEADER}The user asked about order A1, which shipped."),
    ]
    summary_request = triage_model.requests[3]
    assert isinstance(summary_request.messages[1], UserMessage)
    assert "order A1" in summary_request.messages[1].text
    # the summary passed the governor like the run's other model calls, and was counted
    assert calls == ["llm:test:triage-model", "llm:test:triage-model", "llm:test:billing-model"]
    assert result.usage_by_model["test:triage-model"].requests == 2


async def test_a_kept_state_resumes_with_the_target_in_a_new_agent_instance() -> None:
    def build(script: list[Turn | str]) -> tuple[Agent[Any, Any], ScriptedModel]:
        model = ScriptedModel(script, name="billing-model")
        billing = Agent(
            "billing",
            model=model,
            instructions="You are the billing desk.",
            tools=[refund],
            clock=VirtualClock(),
        )
        triage = Agent(
            "triage",
            model=ScriptedModel([_transfer()]),
            handoffs=[billing],
            clock=VirtualClock(),
        )
        return triage, model

    triage, _ = build([Turn(tool_calls=[Call("refund", {"order": "A1"}, id="r1")])])
    first = await triage.run("Refund A1")
    assert first.status == "awaiting_approval"
    assert first.state is not None
    saved = run_state_to_json(first.state)
    again, model = build(["Refunded."])
    directive = Directive(approvals=[ApprovalDecision(tool_call_id="r1", granted=True)])
    result = await again.run(again.deserialize_state(saved), directive=directive)
    assert result.output == "Refunded."
    assert result.last_agent == "billing"
    assert [m.text for m in result.messages if isinstance(m, ToolMessage)][-1] == "refunded A1"
    assert len(model.requests) == 1


def test_handoff_tools_are_recognisable() -> None:
    billing = _billing([])
    triage = Agent("triage", model=ScriptedModel([]), tools=[order_status], handoffs=[billing])
    found = {name: handoff_of(t) for name, t in triage.config.tools.by_name.items()}
    assert found["order_status"] is None
    spec = found["transfer_to_billing"]
    assert spec is not None
    assert spec.target_name == "billing"


# -- durability: suspended after a handoff, resumed by new agents from the store ----------


@tool(side_effect_class="side_effecting", needs_approval=True)
def refund(order: str) -> str:
    """Refund an order."""
    return f"refunded {order}"


def _agents(
    store: str, billing_script: list[Turn | str], triage_script: list[Turn | str]
) -> tuple[Agent[Any, Any], ScriptedModel, ScriptedModel]:
    agents = AgentRegistry()
    billing_model = ScriptedModel(billing_script, name="billing-model")
    triage_model = ScriptedModel(triage_script, name="triage-model")
    agents.add(
        Agent(
            "billing",
            model=billing_model,
            instructions="You are the billing desk.",
            tools=[refund],
            store=store,
            clock=VirtualClock(),
        )
    )
    triage = agents.add(
        Agent(
            "triage",
            model=triage_model,
            handoffs=["billing"],
            store=store,
            clock=VirtualClock(),
            run_options=RunOptions(agent_registry=agents),
        )
    )
    return triage, triage_model, billing_model


@pytest.mark.parametrize("backend", ["sqlite", "postgres"])
async def test_a_run_suspended_after_a_handoff_resumes_with_the_target(
    backend: str, tmp_path: Path
) -> None:
    async with isolated_store(backend, tmp_path) as store:
        triage, triage_model, billing_model = _agents(
            store, [Turn(tool_calls=[Call("refund", {"order": "A1"}, id="r1")])], [_transfer()]
        )
        first = await triage.run("Refund A1")
        assert first.status == "awaiting_approval"
        assert first.last_agent == "billing"
        await triage.aclose()
        # New agents (as in another process): the registry finds billing by name.
        again, triage_model2, billing_model2 = _agents(store, ["Refunded A1."], [])
        directive = Directive(approvals=[ApprovalDecision(tool_call_id="r1", granted=True)])
        result = await again.resume(first.run_id, directive=directive)
        assert result.status == "completed", result.error
        assert result.output == "Refunded A1."
        assert result.last_agent == "billing"
        assert triage_model2.requests == []  # triage's finished call is not made again
        assert len(billing_model2.requests) == 1
        assert billing_model2.requests[0].messages[0] == SystemMessage(
            content="You are the billing desk."
        )
        stores = await again.stores()
        entries = await stores.journal.read(first.run_id)
        kinds = [e.kind for e in entries]
        assert kinds.count("handoff") == 1
        entry = next(e for e in entries if e.kind == "handoff")
        assert entry.payload["from_agent"] == "triage"
        assert entry.payload["to_agent"] == "billing"
        assert filters.descriptor_adapter().validate_python(entry.payload["input_filter"]) == (
            filters.default_handoff_filter()
        )
        await again.aclose()
    del triage_model, billing_model


async def test_a_target_with_another_governor_fails_the_transfer() -> None:
    # a run keeps its governance: a target governed elsewhere would lose one set of limits
    def allow_all(action: PolicyAction) -> None:
        return None

    billing = _billing(["never"], policies=[allow_all])
    triage = Agent(
        "triage",
        model=ScriptedModel([_transfer()]),
        handoffs=[billing],
        policies=[allow_all],
        clock=VirtualClock(),
    )
    result = await triage.run("Hi")
    assert result.status == "failed"
    assert result.error is not None
    assert result.error.code == "handoff_failed"
    assert "has its own governor" in result.error.message


async def test_a_shared_governor_governs_the_target_calls_too() -> None:
    seen: list[str] = []

    def watch(action: PolicyAction) -> None:
        seen.append(action.oracle)

    governor = Governor(policies=[watch], clock=VirtualClock())
    shared = GovernanceOptions(governor=governor)
    billing = _billing(
        [Turn(tool_calls=[Call("order_status", {"order": "A1"}, id="s1")]), "Shipped."],
        governance=shared,
    )
    triage = Agent(
        "triage",
        model=ScriptedModel([_transfer()], name="triage-model"),
        handoffs=[billing],
        governance=shared,
        clock=VirtualClock(),
    )
    result = await triage.run("Where is A1?")
    assert result.output == "Shipped."
    assert seen == [
        "llm:test:triage-model",
        "tool:transfer_to_billing",
        "llm:test:billing-model",
        "tool:order_status",
        "llm:test:billing-model",
    ]


@tool(side_effect_class="read_only", sensitivity="internal")
def payroll(name: str) -> str:
    """Look up a salary."""
    return f"{name} earns 9,000"


async def test_by_sensitivity_reads_the_tools_labels_at_the_boundary() -> None:
    billing = _billing(["I can help with billing."])
    triage = Agent(
        "triage",
        model=ScriptedModel(
            [
                Turn(tool_calls=[Call("payroll", {"name": "ann"}, id="p1")]),
                _transfer(),
            ]
        ),
        tools=[payroll],
        handoffs=[handoff(billing, input_filter=filters.by_sensitivity("public"))],
        clock=VirtualClock(),
    )
    result = await triage.run("What does Ann earn? Then billing.")
    assert result.output == "I can help with billing."
    assert isinstance(billing.config.model, ScriptedModel)
    sent = billing.config.model.requests[0].messages
    assert not any("9,000" in getattr(m, "text", "") for m in sent)
    assert not any(c.name == "payroll" for m in sent for c in getattr(m, "tool_calls", ()))
    # from the handoff on, the run's transcript is the target's view of the conversation
    assert [m.tool_name for m in result.messages if isinstance(m, ToolMessage)] == [
        "transfer_to_billing"
    ]


async def test_a_driven_run_asks_the_application_about_the_target_calls_too() -> None:
    billing = _billing([Turn(tool_calls=[Call("order_status", {"order": "A1"}, id="s1")]), "ok"])
    triage = Agent(
        "triage", model=ScriptedModel([_transfer()]), handoffs=[billing], clock=VirtualClock()
    )
    asked: list[str] = []
    async with triage.drive("Where is A1?") as run:
        event = await run.asend(None)
        while True:
            decision = None
            if event.type == "tool.approval.requested":
                asked.append(event.tool_name)
                decision = Deny("not today") if event.tool_name == "order_status" else None
            try:
                event = await run.asend(decision)
            except StopAsyncIteration:
                break
    assert asked == ["transfer_to_billing", "order_status"]
    assert run.result.last_agent == "billing"
    results = [m.text for m in run.result.messages if isinstance(m, ToolMessage)]
    assert results[-1] == "Denied: not today"


async def test_a_session_sees_the_target_tool_calls() -> None:
    billing = _billing([Turn(tool_calls=[Call("order_status", {"order": "A1"}, id="s1")]), "ok"])
    triage = Agent(
        "triage", model=ScriptedModel([_transfer()]), handoffs=[billing], clock=VirtualClock()
    )
    session = Session(triage, "handoff-session")
    seen: list[str] = []
    session.on("tool_call", lambda call: seen.append(call.call.name))
    session.send("Where is A1?")
    await session.wait_for_idle()
    assert seen == ["transfer_to_billing", "order_status"]
