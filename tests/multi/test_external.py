"""External agents: an async function (or another framework's agent) run like an agent.

agentium §3.3 scenario 24: ``agent.start`` / ``agent.end``; on failure an error event, then
the exception again; the stream carries text and the final event. Plus the durability
boundary: a journaled run id is not called again.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from bastion import Agent
from bastion.core import Usage, UserError
from bastion.multi import (
    ChildBudget,
    ExternalContext,
    ExternalOutput,
    FanOutChild,
    external_agent,
    fan_out,
)
from bastion.stores import open_store
from bastion.testing import Call, ScriptedModel, Turn


async def test_it_runs_and_streams_like_an_agent() -> None:
    # covers §3.3 scenario 24 (events of a successful run)
    async def answer(input: str, ctx: ExternalContext) -> str:
        return f"echo: {input} ({ctx.agent_name})"

    agent = external_agent("echo", answer)
    async with agent.stream("hi") as run:
        events = [event async for event in run]
    assert [e.type for e in events] == ["agent.start", "text.complete", "agent.end"]
    assert [e.seq for e in events] == [1, 2, 3]
    assert run.result.status == "completed"
    assert run.result.output == "echo: hi (echo)"
    assert run.result.text == "echo: hi (echo)"
    assert events[0].run_id == run.run_id


async def test_a_generator_streams_text_deltas() -> None:
    async def pieces(input: str, ctx: ExternalContext) -> AsyncIterator[str]:
        for word in ("one ", "two"):
            yield word

    agent = external_agent("words", pieces)
    async with agent.stream("go") as run:
        events = [event async for event in run]
    assert [e.type for e in events] == [
        "agent.start",
        "text.delta",
        "text.delta",
        "text.complete",
        "agent.end",
    ]
    assert run.result.output == "one two"


async def test_pieces_reach_the_stream_as_the_function_yields_them() -> None:
    first_seen = asyncio.Event()

    async def pieces(input: str, ctx: ExternalContext) -> AsyncIterator[str]:
        yield "one "
        await first_seen.wait()  # only the consumer seeing "one " lets it go on
        yield "two"

    deltas: list[str] = []
    async with external_agent("live", pieces).stream("go") as run:
        async for event in run:
            if event.type == "text.delta":
                deltas.append(event.delta)
                first_seen.set()
    assert deltas == ["one ", "two"]
    assert run.result.output == "one two"


async def test_an_aborted_run_cancels_the_function() -> None:
    started = asyncio.Event()
    cancelled: list[bool] = []

    async def slow(input: str, ctx: ExternalContext) -> str:
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    stream = external_agent("slow", slow).stream("x")

    async def consume() -> list[str]:
        return [event.type async for event in stream]

    task = asyncio.create_task(consume())
    await started.wait()
    stream.abort()
    assert await task == ["agent.start", "agent.end"]
    assert stream.result.status == "aborted"
    assert cancelled == [True]


async def test_a_failure_emits_the_error_and_raises_again() -> None:
    # covers §3.3 scenario 24 (error event, then re-raise)
    async def broken(input: str, ctx: ExternalContext) -> str:
        raise RuntimeError("backend down")

    agent = external_agent("broken", broken)
    seen: list[str] = []
    stream = agent.stream("x")

    async def consume() -> None:
        async for event in stream:
            seen.append(event.type)  # noqa: PERF401 - kept up to the exception

    with pytest.raises(RuntimeError, match="backend down"):
        await consume()
    assert seen == ["agent.start", "agent.error", "agent.end"]
    assert stream.result.status == "failed"
    assert stream.result.error is not None
    assert stream.result.error.code == "external_error"
    with pytest.raises(RuntimeError, match="backend down"):
        await agent.run("x")


async def test_usage_reported_by_the_function_rolls_up_in_a_fan_out() -> None:
    async def costly(input: str, ctx: ExternalContext) -> ExternalOutput:
        return ExternalOutput(
            output="done", usage=Usage(prompt_tokens=40, completion_tokens=2, requests=1)
        )

    async def broken(input: str, ctx: ExternalContext) -> str:
        raise RuntimeError("nope")

    lead = Agent("lead", model=ScriptedModel([]))
    result = await fan_out(
        lead,
        [
            FanOutChild(external_agent("costly", costly), "x"),
            (external_agent("broken", broken), "y"),
        ],
    )
    assert result.output == "done"
    assert result.usage.total_tokens == 42
    failed = result.child("broken")
    assert failed.status == "failed"
    assert failed.error is not None
    assert "RuntimeError: nope" in failed.error.message


async def test_a_token_budget_judges_the_usage_it_reports_at_its_end() -> None:
    async def costly(input: str, ctx: ExternalContext) -> ExternalOutput:
        return ExternalOutput(output="done", usage=Usage(prompt_tokens=900, requests=1))

    lead = Agent("lead", model=ScriptedModel([]))
    result = await fan_out(
        lead, [(external_agent("costly", costly), "x")], per_child_budget=ChildBudget(tokens=500)
    )
    over = result.child("costly")
    assert over.status == "failed"
    assert over.error is not None
    assert over.error.code == "budget_exceeded"
    assert "tokens (900 > 500)" in over.error.message


async def test_a_journaled_run_is_not_called_again(tmp_path: Path) -> None:
    # covers §3.3 scenario 24 (the durability boundary: a journaled result is not redone)
    calls: list[str] = []

    async def answer(input: str, ctx: ExternalContext) -> str:
        calls.append(input)
        return f"answer {len(calls)}"

    url = f"sqlite:///{tmp_path / 'runs.db'}"
    async with open_store(url) as stores:
        first = await external_agent("ext", answer, store=stores).run("q", run_id="ext-1")
        entries = await stores.journal.read("ext-1")
    async with open_store(url) as stores:  # another process would open it the same way
        again = await external_agent("ext", answer, store=stores).run("q", run_id="ext-1")
    assert first.output == again.output == "answer 1"
    assert calls == ["q"]
    assert [e.kind for e in entries] == ["run_started", "tool_result", "run_ended"]


async def test_as_a_tool_it_is_journaled_in_the_parents_store(tmp_path: Path) -> None:
    async def answer(input: str, ctx: ExternalContext) -> str:
        return input.upper()

    async with open_store(f"sqlite:///{tmp_path / 'runs.db'}") as stores:
        lead = Agent(
            "lead",
            model=ScriptedModel(
                [Turn(tool_calls=[Call("shout", {"input": "hey"}, id="c1")]), "ok"]
            ),
            tools=[external_agent("shout", answer).as_tool()],
            store=stores,
        )
        result = await lead.run("go")
        record = await stores.journal.get_run(f"{result.run_id}:c1")
    assert result.tool_calls[0].result == "HEY"
    assert record is not None
    assert record.status == "completed"
    assert record.agent == "shout"


async def test_a_pydantic_ai_agent_through_an_adapter_function() -> None:
    from pydantic_ai import Agent as PydanticAgent
    from pydantic_ai.models.test import TestModel

    other = PydanticAgent(TestModel(custom_output_text="from pydantic-ai"))

    async def adapter(input: str, ctx: ExternalContext) -> ExternalOutput:
        result = await other.run(input)
        spent = result.usage
        usage = Usage(
            prompt_tokens=spent.input_tokens, completion_tokens=spent.output_tokens, requests=1
        )
        return ExternalOutput(output=result.output, usage=usage)

    result = await external_agent("pyd", adapter).run("hello")
    assert result.output == "from pydantic-ai"
    assert result.usage.total_tokens > 0


def test_bad_external_agents_are_refused() -> None:
    with pytest.raises(UserError, match="non-empty string"):
        external_agent("", lambda i, c: None)  # pyright: ignore[reportArgumentType, reportUnknownLambdaType]
    with pytest.raises(UserError, match="fn must be an async function"):
        external_agent("x", "nope")  # pyright: ignore[reportArgumentType]
