"""OpenTelemetry tracing of runs: span tree, GenAI attributes, metrics, content, resume links."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import threading
from collections.abc import Iterator, Sequence
from http.server import BaseHTTPRequestHandler, HTTPServer
from pathlib import Path
from typing import Any, ClassVar

import pytest
from mcp.server.mcpserver import Context
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import HistogramDataPoint, InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import StatusCode

from bastion import Agent, GovernanceOptions, tool
from bastion.agent import ModelOptions, ToolOptions, run_state_from_json, run_state_to_json
from bastion.core import (
    Overloaded,
    RunContext,
    SandboxConfig,
    Usage,
    UserError,
    current_run_tap,
)
from bastion.governance import Budget, Interrupt, InterruptContext, MutateDecision
from bastion.multi import as_tool
from bastion.observability import instrument, trace_headers, uninstrument
from bastion.runtimes import LocalRuntime
from bastion.testing import Call, ScriptedModel, Turn, VirtualClock, fake_mcp_server
from bastion.tools import ApprovalDecision, Directive


class Traced:
    """An installed instrumentation with in-memory span and metric readers."""

    def __init__(self, *, capture_content: bool = False, step_spans: bool = True) -> None:
        self.exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(self.exporter))
        self.reader = InMemoryMetricReader()
        instrument(
            tracer_provider=provider,
            meter_provider=MeterProvider(metric_readers=[self.reader]),
            capture_content=capture_content,
            step_spans=step_spans,
        )

    def spans(self) -> list[ReadableSpan]:
        return list(self.exporter.get_finished_spans())

    def named(self, name: str) -> ReadableSpan:
        (span,) = [s for s in self.spans() if s.name == name]
        return span

    def tree(self) -> list[str]:
        """Each span as its depth-indented name, children in start order."""
        spans = sorted(self.spans(), key=lambda s: s.start_time or 0)
        by_parent: dict[int | None, list[ReadableSpan]] = {}
        ids = {s.context.span_id for s in spans if s.context is not None}
        for s in spans:
            parent = s.parent.span_id if s.parent is not None else None
            by_parent.setdefault(parent if parent in ids else None, []).append(s)
        lines: list[str] = []

        def walk(parent: int | None, depth: int) -> None:
            for s in by_parent.get(parent, []):
                lines.append("  " * depth + s.name)
                walk(s.context.span_id if s.context is not None else None, depth + 1)

        walk(None, 0)
        return lines

    def histogram(self, name: str) -> list[tuple[dict[str, Any], float]]:
        data = self.reader.get_metrics_data()
        assert data is not None
        points: list[tuple[dict[str, Any], float]] = []
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    if metric.name != name:
                        continue
                    for point in metric.data.data_points:
                        assert isinstance(point, HistogramDataPoint)
                        points.append((dict(point.attributes or {}), point.sum))
        return points


@pytest.fixture
def traced() -> Iterator[Traced]:
    yield Traced()
    uninstrument()


@pytest.fixture
def traced_content() -> Iterator[Traced]:
    yield Traced(capture_content=True)
    uninstrument()


@tool(side_effect_class="read_only")
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


@tool(side_effect_class="read_only")
def login(user: str, password: str) -> str:
    """Log in."""
    return json.dumps({"user": user, "session_token": "tok-123", "greeting": "hi"})


@tool(side_effect_class="read_only", sensitivity="secret")
def vault() -> str:
    """Read the vault."""
    return "the launch code is 0000"


def weather_script() -> list[Turn | str]:
    return [
        Turn(
            tool_calls=[Call("weather", {"city": "Oslo"}, id="c1")],
            usage=Usage(prompt_tokens=10, completion_tokens=3),
        ),
        Turn(text="Sunny.", usage=Usage(prompt_tokens=20, completion_tokens=2)),
    ]


def attrs(span: ReadableSpan) -> dict[str, Any]:
    return dict(span.attributes or {})


def event_names(spans: Sequence[ReadableSpan]) -> list[str]:
    return [e.name for s in spans for e in s.events]


async def test_a_run_becomes_a_tree_of_genai_spans_with_usage(traced: Traced) -> None:
    # covers C21
    agent = Agent("forecaster", model=ScriptedModel(weather_script()), tools=[weather])
    result = await agent.run("Weather in Oslo?", session_id="conv-1")
    assert result.output == "Sunny."

    assert traced.tree() == [
        "invoke_agent forecaster",
        "  step 1",
        "    chat scripted",
        "    execute_tool weather",
        "  step 2",
        "    chat scripted",
    ]
    run = attrs(traced.named("invoke_agent forecaster"))
    assert run["gen_ai.operation.name"] == "invoke_agent"
    assert run["gen_ai.agent.name"] == "forecaster"
    assert run["gen_ai.provider.name"] == "test"
    assert run["gen_ai.conversation.id"] == "conv-1"
    assert run["bastion.run.id"] == result.run_id
    assert run["bastion.run.status"] == "completed"
    assert (run["gen_ai.usage.input_tokens"], run["gen_ai.usage.output_tokens"]) == (30, 5)

    chats = [s for s in traced.spans() if s.name == "chat scripted"]
    first, second = sorted(chats, key=lambda s: s.start_time or 0)
    assert attrs(first) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "test",
        "gen_ai.request.model": "scripted",
        "gen_ai.response.model": "scripted",
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.usage.input_tokens": 10,
        "gen_ai.usage.output_tokens": 3,
    }
    assert attrs(second)["gen_ai.response.finish_reasons"] == ("stop",)
    # The model call ends when its stream does, before the tool it asked for runs.
    tool_span = traced.named("execute_tool weather")
    assert (first.end_time or 0) <= (tool_span.start_time or 0)
    assert attrs(tool_span) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "weather",
        "gen_ai.tool.call.id": "c1",
        "gen_ai.tool.type": "function",
    }
    assert all(s.status.status_code is StatusCode.UNSET for s in traced.spans())
    # No content unless asked for.
    assert not [k for s in traced.spans() for k in attrs(s) if "messages" in k or "call.arg" in k]


async def test_without_step_spans_calls_hang_from_the_run() -> None:
    traced = Traced(step_spans=False)
    try:
        agent = Agent("forecaster", model=ScriptedModel(weather_script()), tools=[weather])
        await agent.run("Weather in Oslo?")
    finally:
        uninstrument()
    assert traced.tree() == [
        "invoke_agent forecaster",
        "  chat scripted",
        "  execute_tool weather",
        "  chat scripted",
    ]


async def test_metrics_record_token_usage_and_model_call_duration(traced: Traced) -> None:
    agent = Agent("forecaster", model=ScriptedModel(weather_script()), tools=[weather])
    await agent.run("Weather in Oslo?")

    tokens = traced.histogram("gen_ai.client.token.usage")
    by_type = {a["gen_ai.token.type"]: total for a, total in tokens}
    assert by_type == {"input": 30, "output": 5}
    assert {a["gen_ai.request.model"] for a, _ in tokens} == {"scripted"}
    durations = traced.histogram("gen_ai.client.operation.duration")
    assert [a["gen_ai.operation.name"] for a, _ in durations] == ["chat"]
    assert durations[0][1] >= 0


async def test_a_failed_run_and_a_failed_tool_carry_error_status(traced: Traced) -> None:
    @tool(side_effect_class="read_only")
    def broken() -> str:
        """Always fails."""
        raise RuntimeError("disk on fire")

    script: list[Turn | str] = [Turn(tool_calls=[Call("broken", {}, id="b1")])]
    result = await Agent("a", model=ScriptedModel(script), tools=[broken]).run("go")
    assert result.status == "failed"

    run = traced.named("invoke_agent a")
    assert run.status.status_code is StatusCode.ERROR
    assert attrs(run)["error.type"] == result.error.code if result.error else False
    tool_span = traced.named("execute_tool broken")
    assert tool_span.status.status_code is StatusCode.ERROR
    assert attrs(tool_span)["error.type"] == "execution_failed"
    assert "disk on fire" in (tool_span.status.description or "")


async def test_a_tool_span_carries_the_sandbox_the_call_resolved_to(
    traced: Traced, tmp_path: Path
) -> None:
    # covers G-27
    agent = Agent(
        "ops",
        model=ScriptedModel(weather_script()),
        tools=[weather],
        runtime=LocalRuntime(str(tmp_path)),
        tool_options=ToolOptions(sandbox=SandboxConfig(timeout=4)),
    )
    await agent.run("Weather in Oslo?")
    span = attrs(traced.named("execute_tool weather"))
    assert span["bastion.tool.sandbox"] == "sandbox: no network, 4s, 256 MiB, 64 processes"


async def test_a_fallback_fails_one_chat_span_and_opens_the_next(traced: Traced) -> None:
    primary = ScriptedModel([Turn(error=Overloaded("busy", status=503))], name="primary")
    backup = ScriptedModel(["from backup"], name="backup")
    agent = Agent("a", model=primary, retry=None, model_options=ModelOptions(fallbacks=[backup]))
    assert (await agent.run("go")).output == "from backup"

    assert traced.tree() == [
        "invoke_agent a",
        "  step 1",
        "    chat primary",
        "    chat backup",
    ]
    assert traced.named("chat primary").status.status_code is StatusCode.ERROR
    assert traced.named("chat backup").status.status_code is StatusCode.UNSET
    step = traced.named("step 1")
    (fellback,) = step.events
    assert fellback.name == "bastion.agent.model.fellback"
    assert dict(fellback.attributes or {})["bastion.next_model"] == "test:backup"


async def test_a_sub_agent_run_nests_under_the_parents_tool_span(traced: Traced) -> None:
    child = Agent("researcher", model=ScriptedModel(["Tides follow the moon."], name="small"))
    call = Call("researcher", {"input": "Why tides?"}, id="c1")
    parent = Agent(
        "boss",
        model=ScriptedModel([Turn(tool_calls=[call]), "The moon."], name="big"),
        tools=[as_tool(child, forward_events="none")],
    )
    await parent.run("Explain tides")

    assert traced.tree() == [
        "invoke_agent boss",
        "  step 1",
        "    chat big",
        "    execute_tool researcher",
        "      invoke_agent researcher",
        "        step 1",
        "          chat small",
        "  step 2",
        "    chat big",
    ]
    trace_ids = {s.context.trace_id for s in traced.spans() if s.context is not None}
    assert len(trace_ids) == 1


async def test_content_capture_records_messages_with_secrets_redacted(
    traced_content: Traced,
) -> None:
    script: list[Turn | str] = [
        Turn(
            tool_calls=[
                Call("login", {"user": "ada", "password": "hunter2"}, id="l1"),
                Call("vault", {}, id="v1"),
            ]
        ),
        "Logged in with Bearer abcdefghijklmnop now",
    ]
    agent = Agent("a", model=ScriptedModel(script), tools=[login, vault])
    await agent.run("Log me in")

    dumped = json.dumps([attrs(s) for s in traced_content.spans()])
    for secret in ("hunter2", "tok-123", "abcdefghijklmnop", "0000"):
        assert secret not in dumped
    login_span = traced_content.named("execute_tool login")
    assert json.loads(str(attrs(login_span)["gen_ai.tool.call.arguments"])) == {
        "user": "ada",
        "password": "[REDACTED]",
    }
    assert json.loads(str(attrs(login_span)["gen_ai.tool.call.result"])) == {
        "user": "ada",
        "session_token": "[REDACTED]",
        "greeting": "hi",
    }
    chats = sorted(
        (s for s in traced_content.spans() if s.name == "chat scripted"),
        key=lambda s: s.start_time or 0,
    )
    first_in = json.loads(str(attrs(chats[0])["gen_ai.input.messages"]))
    assert first_in == [{"role": "user", "parts": [{"type": "text", "content": "Log me in"}]}]
    second_in = json.loads(str(attrs(chats[1])["gen_ai.input.messages"]))
    responses = {
        p["id"]: p["response"] for m in second_in if m["role"] == "tool" for p in m["parts"]
    }
    assert responses["v1"] == "[REDACTED]"  # the vault tool's output is marked secret
    (output,) = json.loads(str(attrs(chats[1])["gen_ai.output.messages"]))
    assert output == {
        "role": "assistant",
        "parts": [{"type": "text", "content": "Logged in with [REDACTED] now"}],
        "finish_reason": "stop",
    }


@tool(side_effect_class="side_effecting", needs_approval=True)
def transfer(amount: int) -> str:
    """Send money."""
    return f"sent {amount}"


def bank_script() -> list[Turn | str]:
    return [Turn(tool_calls=[Call("transfer", {"amount": 5}, id="t1")]), "Paid."]


async def test_a_resumed_run_links_to_the_trace_it_continues(traced: Traced) -> None:
    first = Agent("bank", model=ScriptedModel(bank_script()), tools=[transfer])
    suspended = await first.run("pay 5")
    assert suspended.status == "awaiting_approval"
    assert suspended.state is not None
    saved = run_state_to_json(suspended.state)
    original = traced.named("invoke_agent bank")
    assert attrs(original)["bastion.run.status"] == "awaiting_approval"
    approval_events = [e.name for e in traced.named("step 1").events]
    assert approval_events == ["bastion.tool.approval.requested"]

    traced.exporter.clear()
    second = Agent("bank", model=ScriptedModel(["Paid."]), tools=[transfer])
    directive = Directive(approvals=[ApprovalDecision(tool_call_id="t1", granted=True)])
    resumed = await second.run(run_state_from_json(saved), directive=directive)
    assert resumed.output == "Paid."

    run = traced.named("invoke_agent bank")
    assert attrs(run)["bastion.run.resumed"] is True
    (link,) = run.links
    assert original.context is not None
    assert (link.context.trace_id, link.context.span_id) == (
        original.context.trace_id,
        original.context.span_id,
    )
    resolved = [e.name for e in run.events]
    assert resolved == ["bastion.tool.approval.resolved"]


async def test_tools_get_the_trace_context_of_their_span(traced: Traced) -> None:
    seen: list[dict[str, str]] = []

    @tool(side_effect_class="read_only")
    def fetch(ctx: RunContext[None]) -> str:
        """Call a service."""
        seen.append(trace_headers(ctx))
        return "ok"

    script: list[Turn | str] = [Turn(tool_calls=[Call("fetch", {}, id="f1")]), "done"]
    await Agent("a", model=ScriptedModel(script), tools=[fetch]).run("go")

    span = traced.named("execute_tool fetch")
    assert span.context is not None
    (headers,) = seen
    version, trace_id, span_id, _flags = headers["traceparent"].split("-")
    assert (version, trace_id, span_id) == (
        "00",
        format(span.context.trace_id, "032x"),
        format(span.context.span_id, "016x"),
    )


async def test_tracing_is_off_until_instrumented_and_after_uninstrument() -> None:
    assert current_run_tap() is None
    seen: list[dict[str, str]] = []

    @tool(side_effect_class="read_only")
    def fetch(ctx: RunContext[None]) -> str:
        """Call a service."""
        seen.append(trace_headers(ctx))
        return "ok"

    script: list[Turn | str] = [Turn(tool_calls=[Call("fetch", {}, id="f1")]), "done"]
    await Agent("a", model=ScriptedModel(script), tools=[fetch]).run("go")
    assert seen == [{}]

    traced = Traced()
    uninstrument()
    await Agent("a", model=ScriptedModel(["hi"])).run("go")
    assert traced.spans() == []


def test_bad_instrument_arguments_are_user_errors() -> None:
    with pytest.raises(UserError, match="capture_content"):
        instrument(capture_content="yes")  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="step_spans"):
        instrument(step_spans=None)  # pyright: ignore[reportArgumentType]
    with pytest.raises(UserError, match="secret_keys"):
        instrument(secret_keys="pin")
    assert current_run_tap() is None


def test_without_instrumentation_runs_load_no_opentelemetry() -> None:
    code = (
        "import asyncio, sys\n"
        "from bastion import Agent\n"
        "from bastion.core import current_run_tap\n"
        "from bastion.testing import ScriptedModel\n"
        "asyncio.run(Agent('a', model=ScriptedModel(['hi'])).run('go'))\n"
        "print(current_run_tap(), sorted(m for m in sys.modules if 'opentelemetry' in m))\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["None", "[]"]


async def test_a_run_started_before_instrument_stays_untraced() -> None:
    agent = Agent("a", model=ScriptedModel(["one two three"]))
    async with agent.stream("go") as run:
        first = await anext(run)
        assert first.type == "agent.start"
        traced = Traced()
        try:
            rest = [e.type async for e in run]
        finally:
            uninstrument()
    assert rest[-1] == "agent.end"
    assert traced.spans() == []


class Collector(BaseHTTPRequestHandler):
    """An OTLP/HTTP endpoint: keeps the span names of every export request."""

    received: ClassVar[list[str]] = []

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        request = ExportTraceServiceRequest.FromString(body)
        for resource in request.resource_spans:
            for scope in resource.scope_spans:
                self.received.extend(span.name for span in scope.spans)
        self.send_response(200)
        self.send_header("Content-Type", "application/x-protobuf")
        self.end_headers()
        self.wfile.write(b"")

    def log_message(self, format: str, *args: Any) -> None:
        pass


async def test_spans_reach_an_otlp_http_collector() -> None:
    server = HTTPServer(("127.0.0.1", 0), Collector)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    provider = TracerProvider()
    endpoint = f"http://127.0.0.1:{server.server_port}/v1/traces"
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter(endpoint=endpoint)))
    instrument(tracer_provider=provider)
    try:
        agent = Agent("forecaster", model=ScriptedModel(weather_script()), tools=[weather])
        await agent.run("Weather in Oslo?")
    finally:
        uninstrument()
        await asyncio.to_thread(provider.shutdown)  # flushes the batch to the collector
        server.shutdown()
        server.server_close()
    assert sorted(Collector.received) == sorted(
        [
            "invoke_agent forecaster",
            "step 1",
            "chat scripted",
            "execute_tool weather",
            "step 2",
            "chat scripted",
        ]
    )


def test_the_tracing_page_example_runs_as_printed(tmp_path: Path) -> None:
    page = (Path(__file__).parents[2] / "docs" / "tracing.md").read_text(encoding="utf-8")
    code = page.split("```python\n", 1)[1].split("```", 1)[0]
    printed = page.split("prints\n\n```\n", 1)[1].split("```", 1)[0]
    script = tmp_path / "example.py"
    script.write_text(code, encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-W", "error", str(script)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == printed


async def test_a_budget_interrupt_shows_as_span_events(traced: Traced) -> None:
    def approver(interrupt: Interrupt, ctx: InterruptContext) -> MutateDecision:
        return MutateDecision(oracle="llm", limit_type="cost", max=20, approver="human:cfo")

    script: list[Turn | str] = [
        Turn(tool_calls=[Call("weather", {"city": f"c{i}"}, id=f"c{i}")], usage=Usage(cost_usd=6))
        for i in (1, 2)
    ]
    script.append(Turn(text="done", usage=Usage(cost_usd=1)))
    agent = Agent(
        "analyst",
        model=ScriptedModel(script),
        tools=[weather],
        budget=Budget(cost_usd=10, window="day", mutable_by="human:cfo", ceiling=50),
        governance=GovernanceOptions(handle_interrupt=approver),
        clock=VirtualClock(),
    )
    assert (await agent.run("research")).status == "completed"

    signals = [
        dict(e.attributes or {})["bastion.signal"]
        for s in traced.spans()
        for e in s.events
        if e.name == "bastion.governance.signal"
    ]
    assert signals == ["oracle.exceeded", "oracle.interrupt.in", "oracle.interrupt.out"]


async def test_mcp_tool_calls_carry_the_trace_context_in_meta(traced: Traced) -> None:
    seen: list[dict[str, Any]] = []

    def lookup(city: str, ctx: Context) -> str:
        """Look up a city."""
        seen.append(dict(ctx.request_context.meta or {}))
        return f"{city}: 12 C"

    server = fake_mcp_server(lookup)
    script: list[Turn | str] = [Turn(tool_calls=[Call("lookup", {"city": "Oslo"}, id="m1")]), "ok"]
    agent = Agent("a", model=ScriptedModel(script), tools=[server])
    try:
        assert (await agent.run("go")).output == "ok"
    finally:
        await server.aclose()

    span = traced.named("execute_tool lookup")
    assert span.context is not None
    (meta,) = seen
    assert meta["traceparent"].split("-")[1:3] == [
        format(span.context.trace_id, "032x"),
        format(span.context.span_id, "016x"),
    ]


async def test_a_run_inside_an_application_span_is_its_child(traced: Traced) -> None:
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(traced.exporter))
    with provider.get_tracer("app").start_as_current_span("request"):
        await Agent("a", model=ScriptedModel(["hi"])).run("go")
    assert traced.tree() == ["request", "  invoke_agent a", "    step 1", "      chat scripted"]
