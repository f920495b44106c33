"""Record and replay (scenario 37): a recorded run reproduces without calling its model."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import pytest

from bastion import Agent, tool
from bastion.agent import ModelOptions
from bastion.core import AgentEvent, AssistantMessage, TextPart, UserError, UserMessage
from bastion.stores import JournalEntry, Stores, open_store
from bastion.testing import Call, ReplayModel, ScriptedModel, Turn, VirtualClock
from bastion.tools import Tool


class Lookup:
    """A tool whose answer the test controls, counting how often it ran."""

    def __init__(self, answer: str = "Paris: 18 C, sunny") -> None:
        self.answer = answer
        self.runs = 0

    def tool(self) -> Tool:
        lookup = self

        @tool(side_effect_class="read_only")
        def weather(city: str) -> str:
            """The weather in a city."""
            lookup.runs += 1
            return lookup.answer

        return weather


def _script() -> ScriptedModel:
    return ScriptedModel(
        [
            Turn(
                text="Let me check.",
                reasoning="The user wants the weather.",
                tool_calls=[Call("weather", {"city": "Paris"}, id="w1")],
            ),
            Turn(text=["It is ", "18 C ", "and sunny ", "in Paris."]),
        ]
    )


async def _store() -> Stores:
    stores = open_store("memory://")
    await stores.open()
    return stores


def _agent(model: Any, lookup: Lookup, stores: Stores, **options: Any) -> Agent[None, str]:
    return Agent(
        "weather",
        model=model,
        tools=[lookup.tool()],
        store=stores,
        clock=VirtualClock(),
        **options,
    )


def _view(events: list[AgentEvent]) -> list[dict[str, Any]]:
    """The events as a user compares them: every field but the run id and timing."""
    views: list[dict[str, Any]] = []
    for event in events:
        view = asdict(event)
        view.pop("run_id")
        view.pop("duration", None)
        views.append(view)
    return views


async def _recorded(lookup: Lookup) -> tuple[Stores, str, list[AgentEvent], Any]:
    stores = await _store()
    agent = _agent(_script(), lookup, stores, model_options=ModelOptions(record_responses=True))
    events: list[AgentEvent] = []
    async with agent.stream("What is the weather in Paris?") as run:
        events.extend([e async for e in run])
    return stores, run.run_id, events, run.result


async def test_scenario_37_recorded_run_replays_without_live_calls() -> None:
    # covers SPEC §3.1 scenario 37
    lookup = Lookup()
    stores, run_id, original, first = await _recorded(lookup)
    replay = await ReplayModel.from_run(stores, run_id)
    assert replay.input == "What is the weather in Paris?"
    live = ScriptedModel([])  # any live call would fail the run: the script is empty
    agent = _agent(live, lookup, await _store()).with_model(replay)
    events: list[AgentEvent] = []
    async with agent.stream(replay.input) as run:
        events.extend([e async for e in run])
    assert _view(events) == _view(original)  # same events: deltas, calls, results, end
    assert run.result.output == first.output == "It is 18 C and sunny in Paris."
    assert [(c.name, c.arguments) for c in run.result.tool_calls] == [
        ("weather", '{"city": "Paris"}')
    ]
    assert run.result.usage_by_model == first.usage_by_model
    assert lookup.runs == 2  # tools run again by default
    assert replay.remaining == 0


async def test_scenario_37_rerun_can_use_recorded_tool_results() -> None:
    # covers SPEC §3.1 scenario 37
    lookup = Lookup()
    stores, run_id, original, _ = await _recorded(lookup)
    replay = await ReplayModel.from_run(stores, run_id)
    agent = _agent(ScriptedModel([]), lookup, await _store())
    events = [e async for e in replay.rerun(agent, recorded_results=True)]
    assert lookup.runs == 1  # only the recorded run ran the tool
    ends = [e for e in events if e.type == "tool.execute.end"]
    assert [e.result for e in ends] == ["Paris: 18 C, sunny"]
    assert [e.type for e in events] == [e.type for e in original]
    assert events[-1].type == "agent.end"
    assert events[-1].output == "It is 18 C and sunny in Paris."


async def test_rerun_starts_from_the_recorded_history_and_metadata() -> None:
    stores = await _store()
    agent = _agent(
        ScriptedModel(["Still sunny."]),
        Lookup(),
        stores,
        model_options=ModelOptions(record_responses=True),
    )
    history = [
        UserMessage(content="Weather in Paris?"),
        AssistantMessage(parts=[TextPart(text="Sunny.")]),
    ]
    first = await agent.run("And now?", message_history=history, metadata={"user": "ana"})
    replay = await ReplayModel.from_run(stores, first.run_id)
    again = await replay.rerun(_agent(ScriptedModel([]), Lookup(), await _store())).drain()
    assert again.output == "Still sunny."
    assert again.messages[1:] == first.messages[1:]
    assert again.state is not None
    assert again.state.metadata == {"user": "ana"}


async def test_scenario_37_run_without_recording_is_refused() -> None:
    # covers SPEC §3.1 scenario 37
    stores = await _store()
    result = await _agent(_script(), Lookup(), stores).run("What is the weather in Paris?")
    assert result.status == "completed"
    with pytest.raises(UserError, match=r"was not recorded.*record_responses=True"):
        await ReplayModel.from_run(stores, result.run_id)
    with pytest.raises(UserError, match="No journal for run 'run_missing'"):
        await ReplayModel.from_run(stores, "run_missing")


def test_recording_needs_a_store() -> None:
    with pytest.raises(UserError, match=r"record_responses=True keeps .* give the agent a store"):
        Agent("weather", model=_script(), model_options=ModelOptions(record_responses=True))


async def test_scenario_37_divergent_tool_result_fails_naming_the_step() -> None:
    # covers SPEC §3.1 scenario 37
    lookup = Lookup()
    stores, run_id, _, _ = await _recorded(lookup)
    replay = await ReplayModel.from_run(stores, run_id)
    lookup.answer = "Paris: 2 C, snow"  # the world changed since the recording
    result = await _agent(replay, lookup, await _store()).run(replay.input)
    assert result.status == "failed"
    assert result.error is not None
    message = result.error.message
    assert "diverged at step 2" in message
    assert "'Paris: 18 C, sunny'" in message
    assert "'Paris: 2 C, snow'" in message


async def test_scenario_37_more_model_calls_than_recorded_fail_clearly() -> None:
    # covers SPEC §3.1 scenario 37
    lookup = Lookup()
    stores, run_id, _, _ = await _recorded(lookup)
    replay = await ReplayModel.from_run(stores, run_id)
    agent = _agent(replay, lookup, await _store())
    first = await agent.run(replay.input)
    assert first.status == "completed"
    again = await agent.run(replay.input)  # the recording is used up
    assert again.status == "failed"
    assert again.error is not None
    assert "made model call 3, but the recording holds 2" in again.error.message


async def test_scenario_37_other_input_diverges_at_the_first_step() -> None:
    # covers SPEC §3.1 scenario 37
    stores, run_id, _, _ = await _recorded(Lookup())
    replay = await ReplayModel.from_run(stores, run_id)
    result = await _agent(replay, Lookup(), await _store()).run("And in Rome?")
    assert result.error is not None
    assert "diverged at step 1" in result.error.message
    assert "'And in Rome?'" in result.error.message


async def test_a_run_that_compacted_its_context_is_refused() -> None:
    stores, run_id, _, _ = await _recorded(Lookup())
    entries = await stores.journal.read(run_id)
    compaction = JournalEntry(
        seq=3,
        kind="compaction",
        payload={"event_seq": 9, "messages": [], "spent": []},
        schema_version=1,
        recorded_at=entries[2].recorded_at,
    )
    with pytest.raises(UserError, match=r"compacted its context .*entry 3"):
        ReplayModel.from_entries(run_id, [*entries[:2], compaction, *entries[2:]])
