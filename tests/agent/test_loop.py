"""Exact event sequences of the loop (SPEC §3.1 scenarios 1, 2, 6, 7; G-11..G-14, G-29..G-31)."""

from __future__ import annotations

import asyncio

import pytest

from bastion import Agent, RunContext, tool
from bastion.agent import ToolOptions
from bastion.core import AgentEvent, ToolMessage, UserError
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock

from .conftest import brief, kinds


async def collect(agent: Agent[None, str], prompt: str = "go") -> list[AgentEvent]:
    return [event async for event in agent.stream(prompt)]


async def test_plain_text_run() -> None:
    # covers G-11, G-12, G-14, A-13
    agent = Agent("a", model=ScriptedModel(["Hello there, friend."] * 2))
    events = await collect(agent)
    assert brief(events) == [
        "agent.start",
        "step.start 1",
        "text.delta 'Hello '",
        "text.delta 'there, '",
        "text.delta 'friend.'",
        "text.complete",
        "step.end 1 stop",
        "agent.end completed",
    ]
    assert [e.seq for e in events] == list(range(1, len(events) + 1))
    assert len({e.run_id for e in events}) == 1
    result = await agent.run("again")
    assert result.output == "Hello there, friend."
    assert result.status == "completed"
    assert result.usage.requests == 1
    assert result.usage.total_tokens == result.usage.prompt_tokens + result.usage.completion_tokens


async def test_single_tool_call() -> None:
    # covers G-14, G-21, SPEC §3.1 scenario 2
    @tool(side_effect_class="pure")
    def echo(msg: str) -> str:
        """Echo a message."""
        return f"echo:{msg}"

    model = ScriptedModel([Turn(tool_calls=[Call("echo", {"msg": "hi"}, id="c1")]), "done"])
    agent = Agent("a", model=model, tools=[echo])
    events = await collect(agent)
    assert kinds(events) == [
        "agent.start",
        "step.start",
        "tool.call.start",
        "tool.call.delta",
        "tool.call.end",
        "tool.execute.start",
        "tool.execute.end",
        "step.end",
        "step.start",
        "text.delta",
        "text.complete",
        "step.end",
        "agent.end",
    ]
    end = next(e for e in events if e.type == "tool.execute.end")
    assert end.result == "echo:hi"
    tool_message = model.requests[1].messages[-1]
    assert tool_message == ToolMessage(tool_call_id="c1", tool_name="echo", content="echo:hi")


async def test_parallel_tools_finish_out_of_order_but_end_in_call_order() -> None:
    # covers G-29, G-31, T-06, SPEC §3.1 scenario 6
    done: dict[str, asyncio.Event] = {n: asyncio.Event() for n in "abc"}
    waits_for = {"a": "c", "b": "a", "c": None}
    completion: list[str] = []

    @tool(side_effect_class="read_only")
    async def work(name: str) -> str:
        """Finish after another call finished."""
        other = waits_for[name]
        if other is not None:
            await done[other].wait()
        completion.append(name)
        done[name].set()
        return f"{name} done"

    calls = [Call("work", {"name": n}, id=n) for n in "abc"]
    agent = Agent("a", model=ScriptedModel([Turn(tool_calls=calls), "ok"]), tools=[work])
    events = await collect(agent)
    assert completion == ["c", "a", "b"]
    tool_events = [line for line in brief(events) if line.startswith("tool.execute")]
    assert tool_events == [
        "tool.execute.start work#a",
        "tool.execute.start work#b",
        "tool.execute.start work#c",
        "tool.execute.end work#a",
        "tool.execute.end work#b",
        "tool.execute.end work#c",
    ]


async def test_sequential_tool_never_overlaps_parallel_ones() -> None:
    # covers G-30, T-06, SPEC §3.1 scenario 7
    running: set[str] = set()
    overlaps: list[tuple[str, frozenset[str]]] = []
    release = asyncio.Event()

    async def body(name: str) -> str:
        overlaps.append((name, frozenset(running)))
        running.add(name)
        if name == "p1":
            await release.wait()
        elif name == "p0":
            release.set()
        await asyncio.sleep(0)
        running.discard(name)
        return name

    @tool(side_effect_class="read_only")
    async def par(name: str) -> str:
        """A parallel tool."""
        return await body(name)

    @tool(side_effect_class="side_effecting", execution_mode="sequential")
    async def seq(name: str) -> str:
        """A sequential tool."""
        return await body(name)

    calls = [
        Call("par", {"name": "p0"}, id="1"),
        Call("par", {"name": "p1"}, id="2"),
        Call("seq", {"name": "s"}, id="3"),
        Call("par", {"name": "p2"}, id="4"),
    ]
    agent = Agent("a", model=ScriptedModel([Turn(tool_calls=calls), "ok"]), tools=[par, seq])
    events = await collect(agent)
    started = dict(overlaps)
    assert started["p1"] == {"p0"}  # the parallel pair overlapped
    assert started["s"] == frozenset()  # the sequential call ran alone…
    assert started["p2"] == frozenset()  # …and nothing started while it ran
    ends = [line for line in brief(events) if line.startswith("tool.execute.end")]
    assert ends == [
        "tool.execute.end par#1",
        "tool.execute.end par#2",
        "tool.execute.end seq#3",
        "tool.execute.end par#4",
    ]


async def test_max_parallel_tools_bounds_concurrency() -> None:
    # covers G-29
    active = 0
    peak = 0

    @tool(side_effect_class="pure")
    async def step(i: int) -> int:
        """Count concurrency."""
        nonlocal active, peak
        active += 1
        peak = max(peak, active)
        for _ in range(3):
            await asyncio.sleep(0)
        active -= 1
        return i

    calls = [Call("step", {"i": i}) for i in range(6)]
    agent = Agent(
        "a",
        model=ScriptedModel([Turn(tool_calls=calls), "ok"]),
        tools=[step],
        tool_options=ToolOptions(max_parallel=2),
    )
    result = await agent.run("go")
    assert peak == 2
    assert [c.result for c in result.tool_calls] == [str(i) for i in range(6)]


async def test_invalid_arguments_go_back_to_the_model_then_a_corrected_call_runs() -> None:
    # covers G-21, C4 (step 2: invalid args never reach the tool), SPEC §3.3 scenario 7
    ran: list[int] = []

    @tool(side_effect_class="pure")
    def square(x: int) -> int:
        """Square a number."""
        ran.append(x)
        return x * x

    model = ScriptedModel(
        [
            Turn(tool_calls=[Call("square", {"x": "seven"}, id="bad")]),
            Turn(tool_calls=[Call("square", {"x": 7}, id="good")]),
            "49",
        ]
    )
    agent = Agent("a", model=model, tools=[square])
    events = await collect(agent)
    assert [line for line in brief(events) if line.startswith("tool.execute")] == [
        "tool.execute.start square#bad",
        "tool.execute.error square#bad invalid_input",
        "tool.execute.start square#good",
        "tool.execute.end square#good",
    ]
    assert ran == [7]
    feedback = model.requests[1].messages[-1]
    assert isinstance(feedback, ToolMessage)
    assert feedback.is_error
    assert "`x`" in feedback.text
    assert "valid integer" in feedback.text


async def test_malformed_json_and_unknown_tool_are_tool_errors() -> None:
    # covers C4, STYLE 18 (valid options listed)
    @tool(side_effect_class="pure")
    def ping() -> str:
        """Ping."""
        return "pong"

    model = ScriptedModel(
        [Turn(tool_calls=[Call("ping", '{"unterminated": '), Call("pong", {})]), "ok"]
    )
    result = await Agent("a", model=model, tools=[ping]).run("go")
    assert result.status == "completed"
    bad_json, unknown = result.tool_calls
    assert bad_json.error_kind == "invalid_input"
    assert "not valid JSON" in bad_json.result
    assert unknown.error_kind == "unknown_tool"
    assert unknown.result == "Unknown tool 'pong'. Available tools: 'ping'."


async def test_a_raising_tool_is_an_error_result_and_the_loop_goes_on() -> None:
    # covers SPEC §3.4 scenario 3, STYLE 19
    @tool(side_effect_class="read_only")
    def flaky() -> str:
        """Fail."""
        raise RuntimeError("disk on fire")

    model = ScriptedModel([Turn(tool_calls=[Call("flaky")]), "recovered"])
    result = await Agent("a", model=model, tools=[flaky]).run("go")
    assert result.output == "recovered"
    assert result.tool_calls[0].is_error
    assert result.tool_calls[0].result == "Tool 'flaky' failed: RuntimeError: disk on fire"


async def test_tool_receives_run_context_and_deps() -> None:
    # covers, C15
    seen: list[tuple[str, str | None, int, str]] = []

    @tool(side_effect_class="read_only")
    def whoami(ctx: RunContext[str]) -> str:
        """Report the context."""
        seen.append((ctx.deps, ctx.user_id, ctx.step, ctx.tool_call_id or ""))
        ctx.set_state("visits", ctx.get_state("visits", 0) + 1)
        return ctx.deps

    model = ScriptedModel([Turn(tool_calls=[Call("whoami", id="w")]), "ok"])
    agent: Agent[str, str] = Agent("a", model=model, tools=[whoami], deps="default-deps")
    result = await agent.run("go", deps="run-deps", user_id="u1")
    assert seen == [("run-deps", "u1", 1, "w")]
    assert result.tool_calls[0].result == "run-deps"


async def test_streaming_tool_progress_interleaves_before_its_end() -> None:
    # covers G-32, T-21
    from bastion import Progress

    @tool(side_effect_class="read_only")
    async def download(n: int):
        """Stream pieces."""
        for i in range(n):
            yield Progress(current=i + 1, total=n)
            yield f"part{i};"

    model = ScriptedModel([Turn(tool_calls=[Call("download", {"n": 2}, id="d")]), "ok"])
    events = await collect(Agent("a", model=model, tools=[download]))
    tool_kinds = [e.type for e in events if e.type.startswith("tool.execute")]
    assert tool_kinds == [
        "tool.execute.start",
        "tool.execute.progress",
        "tool.execute.partial",
        "tool.execute.progress",
        "tool.execute.partial",
        "tool.execute.end",
    ]
    end = next(e for e in events if e.type == "tool.execute.end")
    assert end.result == "part0;part1;"


async def test_tool_timeout_is_a_timeout_error_result() -> None:
    # covers C19 (seconds), T-11
    never = asyncio.Event()

    @tool(side_effect_class="read_only", timeout=30)
    async def hang() -> str:
        """Never finish."""
        await never.wait()
        return "impossible"

    model = ScriptedModel([Turn(tool_calls=[Call("hang")]), "gave up"])
    clock = VirtualClock()  # the 30 s pass on the virtual clock, at once
    result = await Agent("a", model=model, tools=[hang], clock=clock).run("go")
    assert result.tool_calls[0].error_kind == "timeout"
    assert 30 in clock.sleeps
    assert result.output == "gave up"


async def test_reasoning_is_sent_back_byte_exact_on_the_next_step() -> None:
    # covers G-63, C16
    @tool(side_effect_class="pure")
    def noop() -> str:
        """Nothing."""
        return ""

    model = ScriptedModel(
        [
            Turn(
                reasoning="think hard",
                reasoning_signature="sig==opaque",
                tool_calls=[Call("noop")],
            ),
            "done",
        ]
    )
    events = await collect(Agent("a", model=model, tools=[noop]))
    assert "reasoning.delta" in kinds(events)
    previous = model.requests[1].messages[-2]
    assert previous.role == "assistant"
    part = previous.parts[0]
    assert part.type == "reasoning"
    assert (part.text, part.signature) == ("think hard", "sig==opaque")


async def test_incomplete_tool_call_fails_without_running_it() -> None:
    # covers SPEC §3.1 scenario 23
    ran: list[str] = []

    @tool(side_effect_class="side_effecting")
    def send(to: str) -> str:
        """Send."""
        ran.append(to)
        return "sent"

    model = ScriptedModel(
        [Turn(tool_calls=[Call("send", {"to": "x"}, id="s")], unclosed_calls=True)]
    )
    events = await collect(Agent("a", model=model, tools=[send]))
    assert brief(events)[-4:] == [
        "tool.call.incomplete",
        "step.end 1 tool_calls",
        "agent.error incomplete_tool_call",
        "agent.end failed",
    ]
    assert ran == []


async def test_history_continues_a_conversation() -> None:
    # covers SPEC §3.4 scenario 10 (multi-turn: the model sees the prior history)
    agent = Agent("a", model=ScriptedModel(["first", "second"]), instructions="sys")
    first = await agent.run("one")
    second = await agent.run("two", message_history=first.messages)
    roles = [m.role for m in second.messages]
    assert roles == ["system", "user", "assistant", "user", "assistant"]
    assert second.output == "second"


async def test_a_run_needs_input_or_history() -> None:
    agent = Agent("a", model=ScriptedModel(["x"]))
    with pytest.raises(UserError, match="input or a message_history"):
        agent.stream()
