"""``ctx.oracle.llm`` and agent nodes: the agent loop under the node's policies."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bastion import Agent, GovernanceOptions, tool
from bastion.agent import RunState
from bastion.core import RunFailed
from bastion.governance import Governor, Limit, PolicyAction, PolicyResult, allow, deny
from bastion.graph import AgentEventSignal, Graph, GraphSignal, Layer, Node, NodeContext, NodeError
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock

executed: list[str] = []


@tool(side_effect_class="read_only")
def shell(command: str) -> str:
    """Run a shell command."""
    executed.append(command)
    return f"ran {command}"


@tool(side_effect_class="read_only")
def lookup(q: str) -> str:
    """Look something up."""
    return f"found {q}"


def no_shutdown(action: PolicyAction) -> PolicyResult:
    if action.oracle.startswith("tool") and "system.shutdown" in repr(action.input):
        return deny("shutting the system down is not allowed")
    return allow()


async def collect(graph: Graph, input: Any = None) -> list[GraphSignal]:
    return [signal async for signal in graph.stream(input)]


class Planner(Node):
    """A two-phase node: layers from the inputs, then the model loop over them."""

    def __init__(self, model: ScriptedModel) -> None:
        self.model = model

    def load_prompt(self, inputs: list[Any], ctx: NodeContext) -> Sequence[Layer]:
        return [Layer("system", "You plan."), Layer("task", f"Task: {inputs[0]}")]

    async def execute(self, layers: Sequence[Layer], ctx: NodeContext) -> Any:
        return await ctx.oracle.llm("Go.", model=self.model, layers=layers, tools=[shell])


async def test_a_global_policy_keeps_a_tool_from_running_and_the_model_answers_again() -> None:
    # covers L-12, L-21 (scenario 11)
    executed.clear()
    model = ScriptedModel(
        [Turn(tool_calls=[Call("shell", {"command": "system.shutdown"})]), "I cannot do that."]
    )
    graph = Graph("guarded", governor=Governor(policies=[no_shutdown], clock=VirtualClock()))
    graph.add_node("plan", Planner(model))
    signals = await collect(graph, "tidy up")
    assert executed == []
    tool_result = model.requests[1].messages[-1]
    assert "Denied by policy: shutting the system down" in repr(tool_result)
    after = signals[-1]
    assert after.type == "graph.after"
    assert after.status == "completed"
    assert after.output == "I cannot do that."
    denied = [s for s in signals if s.type == "oracle.denied"]
    assert [s.node for s in denied] == ["plan"]


async def test_a_rounds_limit_stops_the_loop_after_exactly_that_many_rounds() -> None:
    # covers L-12, L-17 (scenario 15: rounds max 2, a model that always calls tools)
    executed.clear()
    always = Turn(tool_calls=[Call("shell", {"command": "ls"})])
    model = ScriptedModel([always] * 5)
    governor = Governor(
        oracles={"llm": [Limit(type="rounds", max=2, window="invocation")]}, clock=VirtualClock()
    )
    graph = Graph("looping", governor=governor)
    graph.add_node("plan", Planner(model))
    signals = await collect(graph, "list files")
    assert executed == ["ls", "ls"]
    assert len(model.requests) == 3
    errors = [s for s in signals if isinstance(s, NodeError)]
    assert [e.node_key for e in errors] == ["plan"]
    assert "budget" in errors[0].error


async def test_the_loop_returns_the_final_text_and_signals_are_not_duplicated() -> None:
    # covers L-12, L-13, L-29 (scenario 16)
    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("lookup", {"q": "a"})]),
            Turn(tool_calls=[Call("lookup", {"q": "b"})]),
            "a and b",
        ]
    )
    governor = Governor(
        oracles={"llm": [Limit(type="calls", max=10, window="invocation")]}, clock=VirtualClock()
    )
    graph = Graph("research", governor=governor)

    async def research(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.oracle.llm(model=model, tools=[lookup])

    graph.add_node("research", research)
    signals = await collect(graph, "find a and b")
    assert signals[-1].type == "graph.after"
    assert signals[-1].output == "a and b"
    counted = [s for s in signals if getattr(s, "name", "") == "oracle.policy.llm"]
    assert len(counted) == len(model.requests) == 3  # one per model call, not two
    agent_events = [s.event.type for s in signals if isinstance(s, AgentEventSignal)]
    assert agent_events[0] == "agent.start"
    assert agent_events[-1] == "agent.end"
    assert "governance.signal" not in agent_events


async def test_an_agent_node_runs_a_full_agent_run_on_the_graphs_governor() -> None:
    # covers L-07, L-12: an Agent as a node, its calls counted with the graph's
    governor = Governor(
        oracles={"llm": [Limit(type="calls", max=1, window="invocation")]}, clock=VirtualClock()
    )
    writer = Agent(
        "writer",
        model=ScriptedModel(["draft one", "draft two"]),
        governance=GovernanceOptions(governor=governor),
    )
    graph = Graph("writing", governor=governor)
    graph.add_node("first", writer, prompt=lambda inputs: f"write about {inputs[0]}")
    graph.add_node("second", writer)
    graph.add_edge("first", "second")
    result = await graph.run("graphs")
    assert result.outputs == {"first": "draft one"}
    error = result.errors["second"]  # one model call per invocation: the graph's
    assert isinstance(error, RunFailed)
    assert error.code == "budget_exceeded"


async def test_graph_policies_and_graph_windows_apply_to_the_model_calls_of_nodes() -> None:
    # covers L-19, L-21: the graph level sits between global and node for ctx.oracle.llm
    def no_big_models(action: PolicyAction) -> PolicyResult:
        if action.oracle == "llm:test:big":
            return deny("big models are not allowed in this graph")
        return allow()

    governor = Governor(
        oracles={"llm": [Limit(type="calls", max=1, window="graph")]}, clock=VirtualClock()
    )
    graph = Graph("frugal", governor=governor, policies=[no_big_models])
    small = ScriptedModel(["one", "two", "three"], name="small")
    big = ScriptedModel(["never"], name="big")

    async def ask_small(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.oracle.llm("hi", model=small)

    async def ask_big(inputs: list[Any], ctx: NodeContext) -> Any:
        return await ctx.oracle.llm("hi", model=big)

    graph.add_node("first", ask_small).add_node("second", ask_small)
    graph.add_node("big", ask_big)
    graph.add_edge("first", "second").add_edge("first", "big")
    result = await graph.run()
    assert result.outputs == {"first": "one"}
    assert "calls 1 of 1 (window graph)" in str(result.errors["second"])
    assert "big models are not allowed in this graph" in str(result.errors["big"])
    assert big.requests == []
    again = await graph.run()  # a new execution: a new graph window
    assert again.outputs["first"] == "two"


async def test_a_node_waiting_for_a_human_suspends_the_graph() -> None:
    # covers L-27: no handler, so the graph ends suspended with what the node waits on
    from bastion.governance import InterruptRequired
    from bastion.graph import NodeInterrupt, Suspended

    @tool(needs_approval=True, side_effect_class="side_effecting")
    def transfer(amount: int) -> str:
        """Move money."""
        return f"sent {amount}"

    banker = Agent(
        "banker",
        model=ScriptedModel([Turn(tool_calls=[Call("transfer", {"amount": 5})]), "done"]),
        tools=[transfer],
    )
    graph = Graph("approvals", governor=Governor(clock=VirtualClock()))
    graph.add_node("pay", banker)

    def confirm(inputs: list[Any]) -> str:
        raise NodeInterrupt({"question": "ship it?"})

    graph.add_node("confirm", confirm)
    graph.add_node("after", lambda inputs: "never")
    graph.add_edge("confirm", "after")
    result = await graph.run("pay 5")
    assert result.status == "suspended"
    waiting = result.errors["pay"]
    assert isinstance(waiting, Suspended)
    assert isinstance(waiting.detail, RunState)
    assert waiting.detail.status == "awaiting_approval"
    asked = result.errors["confirm"]
    assert isinstance(asked, InterruptRequired)
    assert asked.interrupt.payload == {"question": "ship it?"}
    assert "after" not in result.outputs
