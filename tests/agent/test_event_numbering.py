"""Events are numbered once, by the run loop, as they are yielded: gap-free and in order.

Governance signals, a tool batch's live progress, sub-agent wrappers and resumed runs all go
through the same numbering point; nothing renumbers an event after the consumer got it.
"""

from __future__ import annotations

from collections.abc import AsyncIterator

from bastion import Agent, GovernanceOptions, Progress, tool
from bastion.agent import RunOptions
from bastion.core import AgentEvent, EventBus, GovernanceEvent
from bastion.governance import Limit
from bastion.stores import Stores, open_store
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock
from bastion.tools import ApprovalDecision, Directive


async def _numbered(stream: AsyncIterator[AgentEvent]) -> list[tuple[AgentEvent, int]]:
    """Each event with the ``seq`` it had when the consumer received it."""
    return [(event, event.seq) async for event in stream]


def _assert_numbered_once(received: list[tuple[AgentEvent, int]], first: int = 1) -> None:
    seqs = [seq for _, seq in received]
    assert seqs == list(range(first, first + len(received))), seqs
    # Not renumbered later: each event still carries the number it was received with.
    assert [event.seq for event, _ in received] == seqs


async def test_a_relayed_governed_batch_is_numbered_once_in_stream_order() -> None:
    # covers G-31, G-32
    @tool(side_effect_class="pure")
    async def writer(text: str) -> AsyncIterator[str | Progress]:
        """Write the text in two pieces."""
        yield Progress(current=1, total=2)
        yield text[:2]
        yield text[2:]

    calls = [Call("writer", {"text": f"abc{i}"}, id=f"c{i}") for i in (1, 2, 3)]
    agent = Agent(
        "scribe",
        model=ScriptedModel([Turn(tool_calls=calls), "written"]),
        tools=[writer],
        governance=GovernanceOptions(
            oracles={"tool:writer": [Limit(type="calls", max=2, window="minute")]}, events="all"
        ),
        clock=VirtualClock(),
    )
    received = await _numbered(agent.stream("write"))
    _assert_numbered_once(received)
    types = [event.type for event, _ in received]
    # The signals of the admissions travel in the same numbered stream as the tool events.
    assert any(isinstance(event, GovernanceEvent) for event, _ in received)
    assert types.count("tool.execute.partial") == 4  # two calls ran, the third was limited
    assert types.count("tool.execute.progress") == 2
    assert types[0] == "agent.start"
    assert types[-1] == "agent.end"


async def test_a_run_resumed_by_id_numbers_after_its_journal() -> None:
    # covers G-31, G-55
    @tool(side_effect_class="side_effecting", needs_approval=True)
    def send(to: str) -> str:
        """Send a letter."""
        return f"sent to {to}"

    model = ScriptedModel([Turn(tool_calls=[Call("send", {"to": "ann"}, id="s1")]), "done"])

    def agent(stores: Stores) -> Agent[None, str]:  # a new process's agent: one script
        return Agent("post", model=model, tools=[send], store=stores)

    async with open_store("memory://") as stores:
        first = await _numbered(agent(stores).stream("send it"))
        _assert_numbered_once(first)
        run_id = first[0][0].run_id
        assert first[-1][0].type == "agent.end"
        decided = Directive(approvals=[ApprovalDecision(tool_call_id="s1", granted=True)])
        resumed = await _numbered(agent(stores).resume_stream(run_id, directive=decided))
        entries = await stores.journal.read(run_id)
    _assert_numbered_once(resumed, first=first[-1][1] + 1)
    assert [event.type for event, _ in resumed][:3] == [
        "agent.start",
        "tool.approval.resolved",
        "tool.execute.start",
    ]
    assert resumed[-1][0].type == "agent.end"
    # Every entry names the event it records, by the number the consumer saw.
    by_seq = {seq: event for event, seq in first + resumed}
    assert entries[-1].kind == "run_ended"
    assert entries[-1].payload["event_seq"] == resumed[-1][1]
    results = [e for e in entries if e.kind == "tool_result"]
    assert [by_seq[int(e.payload["event_seq"])].type for e in results] == [  # pyright: ignore[reportArgumentType]
        "tool.execute.end"
    ]


async def test_a_run_nobody_streams_skips_the_deltas_but_not_what_observers_see() -> None:
    script = [Turn(tool_calls=[Call("add", {"a": 1, "b": 2})]), "The sum is 3."]
    quiet = await Agent("calc", model=ScriptedModel(script), tools=[add]).run("add")
    streamed = Agent("calc", model=ScriptedModel(script), tools=[add]).stream("add")
    events = [e.type async for e in streamed]
    assert quiet.output == streamed.result.output == "The sum is 3."
    assert quiet.usage == streamed.result.usage
    assert [c.result for c in quiet.tool_calls] == ["3"]
    # Without a reader nothing builds the model's streaming events: fewer are numbered.
    assert quiet.state is not None
    assert streamed.result.state is not None
    assert streamed.result.state.last_seq == len(events)
    assert quiet.state.last_seq == len(events) - sum(t in _STREAMING for t in events)
    # An event bus is a reader: run() then builds and numbers every event.
    seen: list[tuple[str, int]] = []
    bus = EventBus().on("*", lambda e: seen.append((e.type, e.seq)))
    observed = Agent(
        "calc", model=ScriptedModel(script), tools=[add], run_options=RunOptions(event_bus=bus)
    )
    assert (await observed.run("add")).output == "The sum is 3."
    assert [t for t, _ in seen] == events
    assert [s for _, s in seen] == list(range(1, len(events) + 1))


_STREAMING = {
    "text.delta",
    "text.complete",
    "tool.call.start",
    "tool.call.delta",
    "tool.call.end",
}


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b
