"""The spans of one run, opened and closed as its events arrive.

Tree: ``invoke_agent {agent}`` > ``step {n}`` > ``chat {model}`` and ``execute_tool {tool}``;
a sub-agent's ``invoke_agent`` is a child of the parent's ``execute_tool`` span. The model
call's span ends when the model's stream does (the first event that is not a piece of the
stream), but it is closed at ``step.end``, with that end time, so it carries the usage and
finish reason which only the step's end reports.
"""

from __future__ import annotations

import json
import re
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

from opentelemetry.context import Context
from opentelemetry.trace import Span, SpanKind, Status, StatusCode

from bastion.core import (
    AgentEndEvent,
    AgentErrorEvent,
    AgentEvent,
    AgentStartEvent,
    AssistantMessage,
    GovernanceEvent,
    ModelFellbackEvent,
    StepEndEvent,
    StepStartEvent,
    TextCompleteEvent,
    TextPart,
    ToolCall,
    ToolCallEndEvent,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecuteStartEvent,
    ToolMessage,
)

from ._names import (
    CONTINUES,
    agent_attributes,
    event_attributes,
    span_event_name,
    split_model,
)
from ._redact import REDACTED
from ._run_view import RunView
from ._settings import Settings, continued

if TYPE_CHECKING:
    from opentelemetry.util.types import AttributeValue

__all__ = ["CONTENT_TYPES", "SKIPPED_TYPES", "RunSpans"]

# Pieces of the model's stream: while they arrive, the model call is still going on.
STREAM_TYPES = frozenset(
    {
        "text.delta",
        "text.complete",
        "reasoning.delta",
        "tool.call.start",
        "tool.call.delta",
        "tool.call.end",
        "agent.model.retry",
    }
)
QUIET_TYPES = STREAM_TYPES | {"tool.execute.progress", "tool.execute.partial", "subagent.event"}
# Events that only carry content (recorded with capture_content): skipped without it.
CONTENT_TYPES = frozenset({"text.complete", "tool.call.end"})
# Governance signals worth a span event: interrupts, refusals, limits reached.
NOTABLE_SIGNALS = re.compile(r"interrupt|denied|exceeded|refused")
# Events that never change a span: the instrumentation drops them before any other work.
SKIPPED_TYPES = frozenset(
    {
        "text.delta",
        "reasoning.delta",
        "tool.call.start",
        "tool.call.delta",
        "tool.execute.progress",
        "tool.execute.partial",
        "subagent.event",
    }
)


class _Chat:
    __slots__ = ("calls", "ended", "model", "span", "started", "text")

    def __init__(self, span: Span, model: str, *, content: bool) -> None:
        self.span = span
        self.model = model
        self.started = time.time_ns()
        self.ended: int | None = None
        # The answer's pieces, kept only when content is captured.
        self.text: list[str] = [] if content else _NO_TEXT
        self.calls: list[ToolCall] = [] if content else _NO_CALLS


_NO_TEXT: list[str] = []
_NO_CALLS: list[ToolCall] = []


class RunSpans:
    """The open spans of one run; :meth:`on_event` advances them."""

    __slots__ = (
        "_chat",
        "_finished",
        "_parent",
        "_recording",
        "_settings",
        "_step",
        "run",
        "tools",
    )

    def __init__(self, settings: Settings, run: Span) -> None:
        self._settings = settings
        self.run = run
        # A run the sampler left out records nothing: its steps, model and tool calls all
        # stand for the run's own (non-recording) span, which still carries the context.
        self._recording = run.is_recording()
        self._parent = run  # the span new model and tool call spans go under
        self._step: Span | None = None
        self._chat: _Chat | None = None
        self.tools: dict[str, Span] = {}
        # Tool spans whose result waits for the run's messages (to honour ``secret``).
        self._finished: list[tuple[Span, str, str, int]] = []

    @classmethod
    def open(
        cls, settings: Settings, ctx: RunView, event: AgentStartEvent, parent: Context
    ) -> RunSpans:
        """Start the run's span (its parent and the link to a resumed run's trace given)."""
        links = continued(ctx) if event.resumed else []
        span = settings.tracer.start_span(
            f"invoke_agent {event.agent_name}",
            context=parent,
            kind=SpanKind.INTERNAL,
            attributes=agent_attributes(ctx, event),
            links=links,
        )
        context = span.get_span_context()
        ctx.metadata[CONTINUES] = {
            "trace_id": format(context.trace_id, "032x"),
            "span_id": format(context.span_id, "016x"),
        }
        return cls(settings, span)

    def current(self) -> Span:
        """The innermost open span of the run's steps (not its tools)."""
        if self._chat is not None and self._chat.ended is None:
            return self._chat.span
        return self._step or self.run

    def span_for(self, tool_call_id: str | None) -> Span:
        """The span a tool call's work belongs to: its own, else the step's or the run's."""
        if tool_call_id is not None:
            span = self.tools.get(tool_call_id)
            if span is not None:
                return span
        return self._step or self.run

    def on_event(self, ctx: RunView, event: AgentEvent) -> bool:
        """Advance the spans; True when the run ended (its spans are all closed)."""
        chat = self._chat
        if chat is not None and chat.ended is None:
            self._on_stream(chat, event)
        kind = event.type
        if kind in QUIET_TYPES:  # most events: pieces of a stream
            return False
        handler = _HANDLERS.get(kind)
        if handler is None:
            self._note(event)
            return False
        return handler(self, ctx, event)

    def _on_step_start(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, StepStartEvent)
        self._flush_results(ctx)
        self._start_step(ctx, event)
        return False

    def _on_step_end(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, StepEndEvent)
        self._flush_results(ctx)
        self._end_step(event)
        return False

    def _on_tool_start(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, ToolExecuteStartEvent)
        self._start_tool(event)
        return False

    def _on_tool_end(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, ToolExecuteEndEvent | ToolExecuteErrorEvent)
        self._end_tool(event)
        return False

    def _on_fellback(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, ModelFellbackEvent)
        self._fall_back(ctx, event)
        return False

    def _on_error(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, AgentErrorEvent)
        _fail(self.run, event.code, event.message)
        return False

    def _on_end(self, ctx: RunView, event: AgentEvent) -> bool:
        assert isinstance(event, AgentEndEvent)
        self._flush_results(ctx)
        self._end(event)
        return True

    def _note(self, event: AgentEvent) -> None:
        """Any other milestone (approvals, interrupts, guardrails...) as a span event."""
        if isinstance(event, GovernanceEvent) and not NOTABLE_SIGNALS.search(event.signal):
            return  # routine bookkeeping (a call counted in, a usage reported): no event
        tool_call_id: str | None = getattr(event, "tool_call_id", None)
        span = self.span_for(tool_call_id) if tool_call_id else self.current()
        span.add_event(span_event_name(event), event_attributes(event))

    def _on_stream(self, chat: _Chat, event: AgentEvent) -> None:
        if event.type not in STREAM_TYPES:
            chat.ended = time.time_ns()
            seconds = (chat.ended - chat.started) / 1e9
            self._settings.metrics.duration(chat.model, seconds, chat.span)
        elif self._settings.redactor is not None:
            if isinstance(event, TextCompleteEvent):
                chat.text.append(event.text)
            elif isinstance(event, ToolCallEndEvent):
                call = ToolCall(
                    id=event.tool_call_id, name=event.tool_name, arguments=event.arguments
                )
                chat.calls.append(call)
        if event.type == "agent.model.retry":
            chat.span.add_event(span_event_name(event), event_attributes(event))

    def _start_step(self, ctx: RunView, event: StepStartEvent) -> None:
        self._close_step()
        settings = self._settings
        if self._recording and settings.step_spans:
            self._step = self._parent = settings.child(
                f"step {event.step}", self.run, SpanKind.INTERNAL, {"bastion.step": event.step}
            )
        self._open_chat(ctx, event.model)

    def _open_chat(self, ctx: RunView, model: str) -> None:
        settings = self._settings
        redactor = settings.redactor
        if self._recording:
            name, attributes = settings.chat(model)
            if redactor is not None:
                attributes["gen_ai.input.messages"] = redactor.messages(ctx.messages)
            span = settings.child(name, self._parent, SpanKind.CLIENT, attributes)
        else:
            span = self.run
        self._chat = _Chat(span, model, content=redactor is not None)

    def _end_step(self, event: StepEndEvent) -> None:
        chat = self._chat
        if chat is not None:
            usage = event.usage
            chat.span.set_attributes(
                {
                    "gen_ai.response.model": split_model(event.model)[1],
                    "gen_ai.response.finish_reasons": [event.finish_reason],
                    "gen_ai.usage.input_tokens": usage.input_tokens,
                    "gen_ai.usage.output_tokens": usage.output_tokens,
                }
            )
            self._settings.metrics.tokens(chat.model, event.model, usage, chat.span)
            self._output(chat, event.finish_reason)
            chat.span.end(end_time=chat.ended)
            self._chat = None
        self._close_step()

    def _output(self, chat: _Chat, finish_reason: str) -> None:
        redactor = self._settings.redactor
        if redactor is None:
            return
        message = AssistantMessage(
            parts=[TextPart(text=t) for t in chat.text], tool_calls=chat.calls
        )
        output = {
            "role": "assistant",
            "parts": redactor.assistant_parts(message),
            "finish_reason": finish_reason,
        }
        chat.span.set_attribute("gen_ai.output.messages", json.dumps([output], ensure_ascii=False))

    def _fall_back(self, ctx: RunView, event: ModelFellbackEvent) -> None:
        chat = self._chat
        if chat is not None:
            _fail(chat.span, "model_error", event.error)
            chat.span.end(end_time=chat.ended)
            self._chat = None
        (self._step or self.run).add_event(span_event_name(event), event_attributes(event))
        self._open_chat(ctx, event.next_model)

    def _start_tool(self, event: ToolExecuteStartEvent) -> None:
        if not self._recording:
            self.tools[event.tool_call_id] = self.run
            return
        attributes: dict[str, AttributeValue] = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": event.tool_name,
            "gen_ai.tool.call.id": event.tool_call_id,
            "gen_ai.tool.type": "function",
        }
        if event.sandbox is not None:
            attributes["bastion.tool.sandbox"] = event.sandbox
        redactor = self._settings.redactor
        if redactor is not None:
            args = redactor.json_text(event.arguments)
            attributes["gen_ai.tool.call.arguments"] = json.dumps(args, ensure_ascii=False)
        name = f"execute_tool {event.tool_name}"
        self.tools[event.tool_call_id] = self._settings.child(
            name, self._parent, SpanKind.INTERNAL, attributes
        )

    def _end_tool(self, event: ToolExecuteEndEvent | ToolExecuteErrorEvent) -> None:
        span = self.tools.pop(event.tool_call_id, None)
        if span is None:
            return
        if isinstance(event, ToolExecuteErrorEvent):
            _fail(span, event.kind, event.message)
        elif self._settings.redactor is not None:
            self._finished.append((span, event.tool_call_id, event.result, time.time_ns()))
            return
        span.end()

    def _flush_results(self, ctx: RunView) -> None:
        """Close the tool spans that wait for their result, once the messages hold it."""
        redactor = self._settings.redactor
        if not self._finished or redactor is None:
            return
        secret = {
            m.tool_call_id
            for m in ctx.messages
            if isinstance(m, ToolMessage) and m.sensitivity == "secret"
        }
        for span, call_id, result, ended in self._finished:
            shown = REDACTED if call_id in secret else redactor.json_text(result)
            span.set_attribute("gen_ai.tool.call.result", json.dumps(shown, ensure_ascii=False))
            span.end(end_time=ended)
        self._finished.clear()

    def _close_step(self) -> None:
        if self._chat is not None:
            self._chat.span.end(end_time=self._chat.ended)
            self._chat = None
        if self._step is not None:
            self._step.end()
            self._step = None
            self._parent = self.run

    def _end(self, event: AgentEndEvent) -> None:
        for span in self.tools.values():
            span.end()
        self.tools.clear()
        self._close_step()
        usage = event.usage
        self.run.set_attributes(
            {
                "bastion.run.status": event.status,
                "bastion.run.steps": event.steps,
                "gen_ai.usage.input_tokens": usage.input_tokens,
                "gen_ai.usage.output_tokens": usage.output_tokens,
            }
        )
        if event.status == "failed" and event.error is not None:
            _fail(self.run, event.error.code, event.error.message)
        self.run.end()


_Handler = Callable[[RunSpans, RunView, AgentEvent], bool]
# What each event type does to the spans (any other type becomes a span event, or nothing).
_HANDLERS: dict[str, _Handler] = {
    "step.start": RunSpans._on_step_start,  # pyright: ignore[reportPrivateUsage]
    "step.end": RunSpans._on_step_end,  # pyright: ignore[reportPrivateUsage]
    "tool.execute.start": RunSpans._on_tool_start,  # pyright: ignore[reportPrivateUsage]
    "tool.execute.end": RunSpans._on_tool_end,  # pyright: ignore[reportPrivateUsage]
    "tool.execute.error": RunSpans._on_tool_end,  # pyright: ignore[reportPrivateUsage]
    "agent.model.fellback": RunSpans._on_fellback,  # pyright: ignore[reportPrivateUsage]
    "agent.error": RunSpans._on_error,  # pyright: ignore[reportPrivateUsage]
    "agent.end": RunSpans._on_end,  # pyright: ignore[reportPrivateUsage]
}


def _fail(span: Span, error_type: str, message: str) -> None:
    span.set_attribute("error.type", error_type)
    span.set_status(Status(StatusCode.ERROR, message))
