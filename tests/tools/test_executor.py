"""The tool executor: validation, bounded parallel dispatch and the call-order event lifecycle.

Completion order is made deterministic with ``asyncio.Event``s chained between tools; nothing
sleeps.
"""

import asyncio
import threading
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

import pytest
from dirty_equals import IsStr

from bastion.core import (
    AgentEvent,
    RunContext,
    ToolCall,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecutePartialEvent,
    ToolExecuteProgressEvent,
    ToolExecuteStartEvent,
)
from bastion.testing import VirtualClock
from bastion.tools import (
    ApprovalRequest,
    Progress,
    SkipTool,
    Tool,
    ToolBatch,
    ToolCallHooks,
    ToolExecutor,
    ToolResult,
    tool,
)


def make_executor(*tools: Tool, max_parallel: int = 8) -> ToolExecutor:
    return ToolExecutor({t.name: t for t in tools}, max_parallel=max_parallel, clock=VirtualClock())


def make_ctx() -> RunContext[None]:
    return RunContext(run_id="r", agent_name="a")


def calls(*specs: tuple[str, str]) -> list[ToolCall]:
    return [ToolCall(id=f"c{i}", name=name, arguments=args) for i, (name, args) in enumerate(specs)]


def start_batch(
    executor: ToolExecutor,
    tool_calls: Sequence[ToolCall],
    hooks: ToolCallHooks | None = None,
) -> ToolBatch:
    return executor.batch(tool_calls, make_ctx(), hooks=hooks)


async def run(
    executor: ToolExecutor, tool_calls: Sequence[ToolCall], hooks: ToolCallHooks | None = None
) -> tuple[list[AgentEvent], ToolBatch]:
    batch = start_batch(executor, tool_calls, hooks)
    return [e async for e in batch.events()], batch


def brief(event: AgentEvent) -> tuple[str, ...]:
    """The user-visible gist of a lifecycle event."""
    match event:
        case ToolExecuteStartEvent(tool_call_id=i):
            return ("start", i)
        case ToolExecuteEndEvent(tool_call_id=i, result=result):
            return ("end", i, result)
        case ToolExecuteErrorEvent(tool_call_id=i, kind=kind):
            return ("error", i, kind)
        case ToolExecutePartialEvent(tool_call_id=i, content=content):
            return ("partial", i, content)
        case ToolExecuteProgressEvent(tool_call_id=i, current=current, total=total):
            return ("progress", i, str(current), str(total))
        case _:
            return (event.type,)


async def spin(turns: int = 20) -> None:
    """Let other tasks run for a few event-loop turns (no time passes)."""
    for _ in range(turns):
        await asyncio.sleep(0)


@tool(side_effect_class="pure")
def add(a: int, b: int) -> int:
    """Add two numbers."""
    return a + b


@tool(side_effect_class="pure")
async def echo(text: str) -> str:
    """Echo the text."""
    return text


# -- validation and failures become error results the model reads --


async def test_unknown_tool_is_an_error_result_listing_the_available_tools():
    # covers T-05, G-21, G-31
    events, batch = await run(make_executor(add, echo), calls(("nope", "{}")))
    assert [brief(e) for e in events] == [("start", "c0"), ("error", "c0", "unknown_tool")]
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert error.message == "Unknown tool 'nope'. Available tools: 'add', 'echo'."
    outcome = batch.outcomes[0]
    assert outcome is not None
    assert (outcome.is_error, outcome.error_kind) == (True, "unknown_tool")

    events, _ = await run(make_executor(), calls(("nope", "{}")))
    assert isinstance(events[-1], ToolExecuteErrorEvent)
    assert events[-1].message.endswith("Available tools: none.")


async def test_invalid_arguments_are_an_invalid_input_error_and_the_tool_does_not_run():
    # covers T-05, C8
    ran: list[str] = []

    @tool(side_effect_class="pure")
    def book(city: str, nights: int) -> str:
        ran.append(city)
        return "booked"

    events, _ = await run(make_executor(book), calls(("book", '{"nights": "two"}')))
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert error.kind == "invalid_input"
    assert "Invalid arguments for tool 'book'" in error.message
    assert "`city`" in error.message
    assert "`nights`" in error.message
    assert ran == []


async def test_malformed_json_arguments_are_an_invalid_input_error():
    # covers T-05
    events, _ = await run(make_executor(add), calls(("add", '{"a": 1,')))
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert (error.kind, "not valid JSON" in error.message) == ("invalid_input", True)


async def test_a_raising_tool_is_an_execution_failed_error_with_the_exception_text():
    # covers T-05, G-21
    @tool(side_effect_class="pure")
    async def boom() -> str:
        raise ValueError("disk on fire")

    events, batch = await run(make_executor(boom), calls(("boom", "{}")))
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert error.kind == "execution_failed"
    assert error.message == "Tool 'boom' failed: ValueError: disk on fire"
    outcome = batch.outcomes[0]
    assert outcome is not None
    assert outcome.content == error.message


async def test_a_tool_error_reaches_the_model_as_worded_with_its_kind_and_metadata():
    # covers T-05, G-21
    from bastion.tools import ToolError

    @tool(side_effect_class="pure")
    async def strict() -> str:
        raise ToolError(
            "Give a date as YYYY-MM-DD.", kind="invalid_input", metadata={"asked": "date"}
        )

    events, batch = await run(make_executor(strict), calls(("strict", "{}")))
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert (error.kind, error.message) == ("invalid_input", "Give a date as YYYY-MM-DD.")
    outcome = batch.outcomes[0]
    assert outcome is not None
    assert outcome.metadata == {"asked": "date"}


async def test_a_tool_that_overruns_its_timeout_is_a_timeout_error():
    # covers T-05, C19
    never = asyncio.Event()

    @tool(side_effect_class="pure", timeout=30)
    async def hang() -> str:
        await never.wait()
        return "unreachable"

    events, _ = await run(make_executor(hang), calls(("hang", "{}")))
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert error.kind == "timeout"
    assert error.message == "Tool 'hang' timed out after 30 s."


async def test_a_tools_own_timeout_error_is_not_reported_as_a_deadline_it_never_had():
    # A TimeoutError raised by the tool itself (a client library's timeout) is a failure of
    # the tool; the model must not read "timed out after None s".
    # covers T-05
    @tool(side_effect_class="external_stateful")
    async def query_db() -> str:
        raise TimeoutError("database did not answer")

    events, _ = await run(make_executor(query_db), calls(("query_db", "{}")))
    error = events[-1]
    assert isinstance(error, ToolExecuteErrorEvent)
    assert "None" not in error.message
    assert "database did not answer" in error.message


# -- lifecycle order (G-31) --


async def test_start_events_go_out_up_front_and_end_events_in_call_order():
    # covers G-31, G-29, C7
    gates = {name: asyncio.Event() for name in ("fast", "middle")}
    finished: list[str] = []
    starts_seen: list[int] = []
    received: list[AgentEvent] = []

    @tool(side_effect_class="pure")
    async def step(name: str, wait_for: str | None = None) -> str:
        starts_seen.append(sum(isinstance(e, ToolExecuteStartEvent) for e in received))
        if wait_for is not None:
            await gates[wait_for].wait()
        finished.append(name)
        if name in gates:
            gates[name].set()
        return name

    batch = start_batch(
        make_executor(step),
        calls(
            ("step", '{"name": "slow", "wait_for": "middle"}'),
            ("missing", "{}"),
            ("step", '{"name": "middle", "wait_for": "fast"}'),
            ("step", '{"name": "fast"}'),
            ("step", '{"bad": 1}'),
        ),
    )
    async for event in batch.events():
        received.append(event)  # noqa: PERF401 - the tools read it while the batch runs

    assert finished == ["fast", "middle", "slow"]
    assert starts_seen == [5, 5, 5]
    assert [brief(e) for e in received] == [
        ("start", "c0"),
        ("start", "c1"),
        ("start", "c2"),
        ("start", "c3"),
        ("start", "c4"),
        ("end", "c0", "slow"),
        ("error", "c1", "unknown_tool"),
        ("end", "c2", "middle"),
        ("end", "c3", "fast"),
        ("error", "c4", "invalid_input"),
    ]
    assert [o.content if o else None for o in batch.outcomes] == [
        "slow",
        IsStr(regex=r"Unknown tool 'missing'.*"),
        "middle",
        "fast",
        IsStr(regex=r"(?s)Invalid arguments for tool 'step'.*`name`.*"),
    ]


async def test_start_events_carry_the_raw_arguments():
    # covers G-31, G-14
    events, _ = await run(make_executor(add), calls(("add", '{"a": 1, "b": 2}')))
    start = events[0]
    assert isinstance(start, ToolExecuteStartEvent)
    assert (start.tool_name, start.arguments) == ("add", '{"a": 1, "b": 2}')
    assert [brief(e) for e in events] == [("start", "c0"), ("end", "c0", "3")]


@pytest.mark.parametrize(("max_parallel", "expected_peak"), [(1, 1), (2, 2), (8, 4)])
async def test_max_parallel_bounds_how_many_calls_run_at_once(
    max_parallel: int, expected_peak: int
):
    # covers G-29, T-06, C7
    running = 0
    peak = 0

    @tool(side_effect_class="pure")
    async def work(n: int) -> int:
        nonlocal running, peak
        running += 1
        peak = max(peak, running)
        await spin(5)
        running -= 1
        return n

    events, _ = await run(
        make_executor(work, max_parallel=max_parallel),
        calls(*(("work", f'{{"n": {i}}}') for i in range(4))),
    )
    assert peak == expected_peak
    assert [brief(e) for e in events][4:] == [("end", f"c{i}", str(i)) for i in range(4)]


async def test_a_sequential_tool_never_overlaps_any_other_call():
    # covers G-30, T-06, C7
    running: set[str] = set()
    seen_running: dict[str, set[str]] = {}

    async def body(label: str) -> str:
        running.add(label)
        seen_running[label] = set(running)
        await spin(5)
        seen_running[label] |= running
        running.discard(label)
        return label

    @tool(side_effect_class="pure")
    async def work(label: str) -> str:
        return await body(label)

    @tool(side_effect_class="side_effecting", execution_mode="sequential")
    async def exclusive(label: str) -> str:
        return await body(label)

    events, _ = await run(
        make_executor(work, exclusive),
        calls(
            ("work", '{"label": "p0"}'),
            ("work", '{"label": "p1"}'),
            ("exclusive", '{"label": "S"}'),
            ("work", '{"label": "p2"}'),
            ("work", '{"label": "p3"}'),
        ),
    )
    assert seen_running["S"] == {"S"}
    assert all("S" not in others for label, others in seen_running.items() if label != "S")
    # The calls around it still run in parallel with each other.
    assert seen_running["p0"] == {"p0", "p1"}
    assert seen_running["p2"] == {"p2", "p3"}
    assert [brief(e)[:2] for e in events][5:] == [("end", f"c{i}") for i in range(5)]


# -- streaming tools (G-32, T-21) --


async def test_async_generator_tool_streams_partials_live_and_joins_them_as_the_result():
    # covers G-32, T-21, G-31
    done_streaming = asyncio.Event()

    @tool(side_effect_class="pure")
    async def blocker() -> str:
        await done_streaming.wait()
        return "unblocked"

    @tool(side_effect_class="pure")
    async def writer() -> AsyncIterator[str | Progress]:
        yield "Hel"
        yield Progress(current=1, total=2, message="half")
        yield "lo"
        done_streaming.set()

    events, batch = await run(
        make_executor(blocker, writer), calls(("blocker", "{}"), ("writer", "{}"))
    )
    # The writer's pieces come out while the earlier call is still running, before its end.
    assert [brief(e) for e in events] == [
        ("start", "c0"),
        ("start", "c1"),
        ("partial", "c1", "Hel"),
        ("progress", "c1", "1", "2"),
        ("partial", "c1", "lo"),
        ("end", "c0", "unblocked"),
        ("end", "c1", "Hello"),
    ]
    progress = events[3]
    assert isinstance(progress, ToolExecuteProgressEvent)
    assert progress.message == "half"
    outcome = batch.outcomes[1]
    assert outcome is not None
    assert outcome.content == "Hello"


async def test_every_piece_of_a_single_streaming_tool_is_delivered():
    # covers G-32, T-21
    @tool(side_effect_class="pure")
    async def writer() -> AsyncIterator[str]:
        for piece in ("a", "b", "c"):
            yield piece

    events, _ = await run(make_executor(writer), calls(("writer", "{}")))
    assert [brief(e) for e in events] == [
        ("start", "c0"),
        ("partial", "c0", "a"),
        ("partial", "c0", "b"),
        ("partial", "c0", "c"),
        ("end", "c0", "abc"),
    ]


async def test_a_yielded_tool_result_is_the_final_result_with_its_metadata():
    # covers T-21, C8
    @tool(side_effect_class="pure")
    async def report() -> AsyncIterator[str | ToolResult]:
        yield "draft "
        yield ToolResult(output={"rows": 3}, metadata={"source": "db"})

    events, batch = await run(make_executor(report), calls(("report", "{}")))
    assert [brief(e) for e in events] == [
        ("start", "c0"),
        ("partial", "c0", "draft "),
        ("end", "c0", '{"rows":3}'),
    ]
    outcome = batch.outcomes[0]
    assert outcome is not None
    assert outcome.metadata == {"source": "db"}


async def test_a_returned_tool_result_keeps_metadata_out_of_the_models_text():
    # covers C8
    @tool(side_effect_class="pure")
    def lookup() -> ToolResult:
        return ToolResult(output="42", metadata={"cache": "hit"})

    events, batch = await run(make_executor(lookup), calls(("lookup", "{}")))
    assert brief(events[-1]) == ("end", "c0", "42")
    outcome = batch.outcomes[0]
    assert outcome is not None
    assert outcome.metadata == {"cache": "hit"}


async def test_ctx_report_progress_inside_a_tool_becomes_progress_events():
    # covers T-21, A-01, G-32
    seen: list[tuple[str | None, str | None]] = []

    @tool(side_effect_class="pure")
    async def crawl(ctx: RunContext[Any], pages: int) -> str:
        seen.append((ctx.tool_call_id, ctx.tool_name))
        for page in range(1, pages + 1):
            ctx.report_progress(page, pages, f"page {page}")
        return "crawled"

    events, _ = await run(make_executor(crawl), calls(("crawl", '{"pages": 2}')))
    assert [brief(e) for e in events] == [
        ("start", "c0"),
        ("progress", "c0", "1", "2"),
        ("progress", "c0", "2", "2"),
        ("end", "c0", "crawled"),
    ]
    assert [e.message for e in events if isinstance(e, ToolExecuteProgressEvent)] == [
        "page 1",
        "page 2",
    ]
    assert seen == [("c0", "crawl")]


async def test_a_sync_tool_in_a_thread_can_report_progress():
    # covers T-21, A-01
    @tool(side_effect_class="pure")
    def index(ctx: RunContext[Any]) -> str:
        ctx.report_progress(1, 1)
        return "indexed"

    events, _ = await run(make_executor(index), calls(("index", "{}")))
    assert [brief(e) for e in events] == [
        ("start", "c0"),
        ("progress", "c0", "1", "1"),
        ("end", "c0", "indexed"),
    ]


async def test_streamed_content_becomes_the_result_when_the_tool_returns_nothing():
    # covers T-21
    @tool(side_effect_class="pure")
    async def narrate(ctx: RunContext[Any]) -> None:
        ctx.stream_content("once ")
        ctx.stream_content("upon")

    events, _ = await run(make_executor(narrate), calls(("narrate", "{}")))
    assert [brief(e) for e in events] == [
        ("start", "c0"),
        ("partial", "c0", "once "),
        ("partial", "c0", "upon"),
        ("end", "c0", "once upon"),
    ]


# -- threads --


async def test_sync_tools_run_in_a_worker_thread_unless_told_otherwise():
    # covers C8
    loop_thread = threading.get_ident()
    threads: dict[str, int] = {}

    @tool(side_effect_class="pure")
    def threaded() -> str:
        threads["threaded"] = threading.get_ident()
        return "t"

    @tool(side_effect_class="pure", run_in_thread=False)
    def inline() -> str:
        threads["inline"] = threading.get_ident()
        return "i"

    @tool(side_effect_class="pure")
    async def native() -> str:
        threads["native"] = threading.get_ident()
        return "n"

    for name in ("threaded", "inline", "native"):
        events, _ = await run(make_executor(threaded, inline, native), calls((name, "{}")))
        assert brief(events[-1]) == ("end", "c0", name[0])
    assert threads["threaded"] != loop_thread
    assert threads["inline"] == loop_thread
    assert threads["native"] == loop_thread


# -- hooks (A-20, A-21) --


class RecordingHooks:
    def __init__(self, skip: Mapping[str, Any] | None = None, rewrite: str | None = None) -> None:
        self.skip = dict(skip or {})
        self.rewrite = rewrite
        self.before_calls: list[tuple[str, dict[str, Any]]] = []
        self.after_calls: list[tuple[str, str]] = []
        self.asked: list[str] = []

    async def before(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> SkipTool | None:
        self.before_calls.append((tool.name, dict(args)))
        if tool.name in self.skip:
            return SkipTool(result=self.skip[tool.name])
        return None

    async def after(self, tool: Tool, call: ToolCall, content: str) -> str:
        self.after_calls.append((call.id, content))
        return self.rewrite if self.rewrite is not None else content

    async def before_approval(self, request: ApprovalRequest) -> None:
        self.asked.append(request.tool_call_id)


async def test_skip_tool_from_before_skips_the_tool_and_uses_the_given_result():
    #
    ran: list[str] = []

    @tool(side_effect_class="external_stateful")
    async def charge(amount: int) -> str:
        ran.append("charge")
        return "charged"

    hooks = RecordingHooks(skip={"charge": {"mocked": True}})
    events, _ = await run(make_executor(charge), calls(("charge", '{"amount": 5}')), hooks)
    assert ran == []
    assert brief(events[-1]) == ("end", "c0", '{"mocked":true}')
    assert hooks.before_calls == [("charge", {"amount": 5})]


async def test_after_replaces_the_result_the_model_reads():
    #
    hooks = RecordingHooks(rewrite="[redacted]")
    events, batch = await run(
        make_executor(add, echo),
        calls(("add", '{"a": 1, "b": 1}'), ("echo", '{"text": "x"}')),
        hooks,
    )
    assert [brief(e) for e in events][2:] == [
        ("end", "c0", "[redacted]"),
        ("end", "c1", "[redacted]"),
    ]
    assert sorted(hooks.after_calls) == [("c0", "2"), ("c1", "x")]
    assert [o.content for o in batch.outcomes if o] == ["[redacted]", "[redacted]"]


async def test_hooks_see_raw_schema_and_model_arguments_as_a_mapping():
    #
    def search(args: dict[str, Any]) -> str:
        return "found"

    raw = tool(search, parameters={"type": "object"}, side_effect_class="read_only")
    hooks = RecordingHooks()
    await run(make_executor(raw), calls(("search", '{"q": "cats"}')), hooks)
    assert hooks.before_calls == [("search", {"q": "cats"})]


# -- sequence numbers --


async def test_the_executor_leaves_numbering_to_the_run_loop():
    # The loop numbers each event as it yields it (tests/agent/test_event_numbering.py).
    @tool(side_effect_class="pure")
    async def fast() -> str:
        return "f"

    @tool(side_effect_class="pure")
    async def writer() -> AsyncIterator[str | Progress]:
        yield "a"
        yield Progress(current=1)
        yield "b"

    batch = start_batch(
        make_executor(fast, writer, add),
        calls(("fast", "{}"), ("writer", "{}"), ("nope", "{}"), ("add", '{"a": 1, "b": 2}')),
    )
    events = [e async for e in batch.events()]
    assert {e.seq for e in events} == {0}, [brief(e) for e in events]
    assert [brief(e) for e in events][:4] == [("start", f"c{i}") for i in range(4)]


async def test_a_single_fast_path_call_yields_its_events_unnumbered():
    events, _ = await run(make_executor(add), calls(("add", '{"a": 1, "b": 2}')))
    assert [brief(e) for e in events] == [("start", "c0"), ("end", "c0", "3")]
    assert all(e.run_id == "r" and e.seq == 0 for e in events)


# -- robustness --


async def test_a_tool_raising_cancelled_error_does_not_hang_the_batch():
    # A tool awaiting something that was cancelled elsewhere re-raises CancelledError; the
    # batch must still settle rather than wait forever for that call's completion.
    # covers G-31, T-05
    @tool(side_effect_class="pure")
    async def flaky() -> str:
        raise asyncio.CancelledError

    batch = start_batch(
        make_executor(flaky, echo), calls(("flaky", "{}"), ("echo", '{"text": "x"}'))
    )
    received: list[AgentEvent] = []

    async def consume() -> None:
        async for event in batch.events():
            received.append(event)  # noqa: PERF401 - shown if the batch hangs

    consumer = asyncio.ensure_future(consume())
    try:
        # A hang is the failure: the real-time bound only stops a broken test.
        done, _ = await asyncio.wait([consumer], timeout=10)
        assert done, [brief(e) for e in received]
    finally:
        consumer.cancel()
        await asyncio.gather(consumer, return_exceptions=True)


async def test_what_the_run_learns_from_a_call_is_typed_not_metadata():
    @tool(side_effect_class="side_effecting", idempotency_key=lambda a: f"pay-{a['to']}")
    def pay(to: str) -> ToolResult:
        """Pay someone."""
        return ToolResult(output="paid", metadata={"receipt": 7}, untrusted=True)

    _, batch = await run(make_executor(pay), calls(("pay", '{"to": "ann"}')))
    outcome = batch.outcomes[0]
    assert outcome is not None
    assert outcome.idempotency_key == "pay-ann"
    assert outcome.untrusted
    assert not outcome.cached
    assert outcome.metadata == {"receipt": 7}  # the tool's own, nothing of ours
