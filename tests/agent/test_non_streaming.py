"""Non-streaming calls end to end: the same run whether the model streamed or not (issue 12)."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest

from bastion import Agent, ModelSettings, tool
from bastion.core import AgentEvent, ModelRequest, Overloaded, StreamChunk, TextChunk
from bastion.testing import Call, FunctionModel, ScriptedModel, Turn


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


def script() -> list[Turn | str]:
    return [
        Turn(
            reasoning="I should add them.",
            reasoning_signature="sig-1",
            text="Let me add.",
            tool_calls=[Call("add", {"a": 1, "b": 2}, id="c1"), Call("add", {"a": 3, "b": 4})],
        ),
        "The sums are 3 and 7.",
    ]


_JOINED = {"text.delta": "delta", "reasoning.delta": "delta", "tool.call.delta": "args_delta"}


def merged(events: Sequence[AgentEvent]) -> list[tuple[str, str]]:
    """Events as (type, identifying text), runs of deltas joined: what a user reads."""
    rows: list[tuple[str, str]] = []
    for event in events:
        field = _JOINED.get(event.type)
        if field is not None:
            text = str(getattr(event, field))
            if rows and rows[-1][0] == event.type:
                rows[-1] = (event.type, rows[-1][1] + text)
            else:
                rows.append((event.type, text))
        elif event.type == "tool.call.end":
            rows.append((event.type, f"{event.tool_name} {event.arguments}"))
        elif event.type == "tool.execute.end":
            rows.append((event.type, f"{event.tool_name} {event.result}"))
        elif event.type == "agent.end":
            rows.append((event.type, f"{event.status} {event.output}"))
        else:
            rows.append((event.type, ""))
    return rows


async def run(model: Any, stream: bool | None) -> list[AgentEvent]:
    agent = Agent(
        "a", model=model, tools=[add], model_settings=ModelSettings(stream=stream), retry=None
    )
    return [e async for e in agent.stream("add 1+2 and 3+4")]


async def test_the_same_events_come_out_whether_the_model_streamed_or_not() -> None:
    # covers issue 12 (non-streaming calls end to end; same events either way)
    streamed_model = ScriptedModel(script())
    whole_model = ScriptedModel(script())
    streamed = await run(streamed_model, stream=None)
    whole = await run(whole_model, stream=False)
    assert merged(whole) == merged(streamed)
    assert [r.settings.stream for r in whole_model.requests] == [False, False]
    # Fewer, larger deltas: one text delta per answer instead of one per word.
    deltas = [e for e in whole if e.type == "text.delta"]
    assert [e.delta for e in deltas] == ["Let me add.", "The sums are 3 and 7."]
    assert whole[-1].type == "agent.end"
    assert whole[-1].output == "The sums are 3 and 7."


async def test_the_transcript_is_identical_either_way() -> None:
    streamed_model = ScriptedModel(script())
    whole_model = ScriptedModel(script())
    await run(streamed_model, stream=None)
    await run(whole_model, stream=False)
    assert whole_model.requests[1].messages == streamed_model.requests[1].messages


async def test_a_failing_non_streamed_call_fails_before_any_event_and_is_retried() -> None:
    model = ScriptedModel(
        [Turn(text="partial answer", error=Overloaded("busy", status=503), error_after=2), "ok"]
    )
    agent = Agent("a", model=model, model_settings=ModelSettings(stream=False))
    events = [e async for e in agent.stream("hi")]
    types = [e.type for e in events]
    assert types[:3] == ["agent.start", "step.start", "agent.model.retry"]
    assert "partial" not in "".join(e.delta for e in events if e.type == "text.delta")
    assert events[-1].type == "agent.end"
    assert events[-1].output == "ok"


@pytest.mark.parametrize("stream", [None, False])
async def test_function_models_honour_the_setting(stream: bool | None) -> None:
    async def words(request: ModelRequest) -> AsyncIterator[str | StreamChunk]:
        for word in ("one ", "two ", "three"):
            yield word

    model = FunctionModel(stream_function=words)
    chunks = [
        c
        async for c in model.stream(
            ModelRequest(messages=[], settings=ModelSettings(stream=stream))
        )
    ]
    texts = [c.text for c in chunks if isinstance(c, TextChunk)]
    assert "".join(texts) == "one two three"
    assert len(texts) == (1 if stream is False else 3)
    assert chunks[-1].type == "finish"
