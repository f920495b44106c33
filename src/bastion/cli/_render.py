"""The event renderer of ``bastion run`` and ``bastion demo``.

Turns a run's :data:`~bastion.core.AgentEvent` stream into what a person watches: answer
text streamed as it arrives, one line per tool call (``running``, then ✓ or ✗ with its
duration and a preview of the result), retries, fallbacks, guardrails and errors as they
happen, and a closing summary. On a terminal, spinners and in-place updates use rich's
``Live``; in plain mode (``--plain``, pipes, tests) every line is printed once, in order,
without ANSI codes, so the output is stable.

Called by ``_app``; knows nothing of agents, only of events.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from types import TracebackType
from typing import Literal, Self, assert_never

from rich.console import Console, Group, RenderableType
from rich.live import Live
from rich.padding import Padding
from rich.spinner import Spinner
from rich.text import Text

from bastion.core import (
    AgentCancellingEvent,
    AgentEndEvent,
    AgentErrorEvent,
    AgentEvent,
    AgentFollowUpEvent,
    AgentStartEvent,
    AgentSteeredEvent,
    AgentSuggestionsEvent,
    ContextCompactedEvent,
    ContextCompactionFailedEvent,
    GovernanceEvent,
    GuardrailTrippedEvent,
    HandoffEvent,
    ModelCircuitEvent,
    ModelFellbackEvent,
    ModelRetryEvent,
    ReasoningDeltaEvent,
    RunStatus,
    StepEndEvent,
    StepStartEvent,
    SubagentEvent,
    TextCompleteEvent,
    TextDeltaEvent,
    ToolApprovalRequestedEvent,
    ToolApprovalResolvedEvent,
    ToolCallDeltaEvent,
    ToolCallEndEvent,
    ToolCallIncompleteEvent,
    ToolCallStartEvent,
    ToolExecuteEndEvent,
    ToolExecuteErrorEvent,
    ToolExecutePartialEvent,
    ToolExecuteProgressEvent,
    ToolExecuteStartEvent,
    ToolLoopDetectedEvent,
    ToolRetryEvent,
    ToolSourceErrorEvent,
    VerifierResultEvent,
)
from bastion.tools import render_output

from ._format import format_call, format_duration, format_summary, preview
from ._notices import notice
from ._progress import bar

__all__ = ["Renderer"]

_STATUS_STYLE: dict[RunStatus, str] = {
    "completed": "bold green",
    "running": "bold",
    "awaiting_approval": "bold yellow",
    "stopped": "bold yellow",
    "aborted": "bold yellow",
    "failed": "bold red",
}


@dataclass(slots=True)
class _ToolRow:
    """One tool call of the batch on screen."""

    call: str
    state: Literal["running", "ok", "error"] = "running"
    detail: str = ""
    duration: float = 0.0
    done: tuple[float, float] | None = None  # progress reported with a total


class Renderer:
    """Render the events of a run to a rich console.

    Use it as a context manager so a live region is always closed, even when the run is
    interrupted::

        with Renderer(console) as renderer:
            async for event in run:
                renderer.handle(event)

    Args:
        console: Where to write.
        live: Animate with spinners and in-place updates. Default: when ``console`` is a
            terminal. With ``False`` each line is printed once, as plain text.
        clock: Monotonic clock in seconds, for the run's duration in the summary.
    """

    def __init__(
        self,
        console: Console,
        *,
        live: bool | None = None,
        clock: Callable[[], float] = time.perf_counter,
    ) -> None:
        self._console = console
        self._animate = console.is_terminal if live is None else live
        self._clock = clock
        self._rows: dict[str, _ToolRow] = {}
        self._batch: Live | None = None
        self._status: Live | None = None
        self._stream: Literal["text", "reasoning"] | None = None
        self._mid_line = False
        self._started_at: float | None = None
        self._steps = 0
        self._call_ids: set[str] = set()
        self._wrote_text = False
        self._text_pending = False
        self.status: RunStatus | None = None
        """The status of the run, once its ``agent.end`` was rendered."""

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def close(self) -> None:
        """Stop any live region and end the current line."""
        self._settle()
        self._end_line()

    def handle(self, event: AgentEvent) -> None:
        """Render one event."""
        match event:
            case AgentStartEvent():
                self._started_at = self._clock()
                self._line(
                    Text.assemble(
                        ("● ", "bold cyan"),
                        (event.agent_name, "bold"),
                        (f" · {event.model}", "dim"),
                    )
                )
            case StepStartEvent():
                self._steps = max(self._steps, event.step)
                self._line(Text(f"step {event.step} · {event.model}", style="dim"))
                self._show_status("thinking…")
            case TextDeltaEvent():
                self._write("text", event.delta)
            case ReasoningDeltaEvent():
                self._write("reasoning", event.delta)
            case TextCompleteEvent():
                if not self._text_pending and event.text:  # the model did not stream it
                    self._write("text", event.text)
                self._text_pending = False
                self._end_line()
            case ToolCallStartEvent():
                self._show_status(f"writing a call to {event.tool_name}…")
            case ToolCallDeltaEvent() | ToolCallEndEvent():
                pass  # the call is shown whole, with its final arguments, when it starts
            case ToolExecuteStartEvent():
                self._start_tool(event)
            case ToolExecuteProgressEvent():
                self._progress(event)
            case ToolExecutePartialEvent():
                self._partial(event)
            case ToolExecuteEndEvent():
                self._finish_tool(
                    event.tool_call_id, event.tool_name, "ok", event.result, event.duration
                )
            case ToolExecuteErrorEvent():
                detail = f"{event.kind}: {event.message}"
                self._finish_tool(
                    event.tool_call_id, event.tool_name, "error", detail, event.duration
                )
            case StepEndEvent():
                self._clear_status()
            case (
                AgentCancellingEvent()
                | AgentErrorEvent()
                | AgentFollowUpEvent()
                | AgentSteeredEvent()
                | AgentSuggestionsEvent()
                | ContextCompactedEvent()
                | ContextCompactionFailedEvent()
                | GovernanceEvent()
                | GuardrailTrippedEvent()
                | ModelCircuitEvent()
                | ModelFellbackEvent()
                | ModelRetryEvent()
                | ToolApprovalRequestedEvent()
                | ToolApprovalResolvedEvent()
                | ToolCallIncompleteEvent()
                | ToolSourceErrorEvent()
                | ToolRetryEvent()
                | ToolLoopDetectedEvent()
                | VerifierResultEvent()
            ):
                self._line(notice(event))
            case AgentEndEvent():
                self._end(event)
            case SubagentEvent():
                self._subagent(event)
            case HandoffEvent():
                line = f"⇢ {event.from_agent} hands the conversation to {event.to_agent}"
                self._line(Text(line, style="cyan"))
            case _:
                assert_never(event)

    # -- text ---------------------------------------------------------------------------

    def _write(self, kind: Literal["text", "reasoning"], delta: str) -> None:
        self._settle()
        if self._stream != kind:
            self._end_line()
            self._stream = kind
            if kind == "reasoning":
                self._console.print(Text("thinking: ", style="dim italic"), end="")
        if kind == "text":
            self._wrote_text = self._text_pending = True
        style = "dim italic" if kind == "reasoning" else ""
        self._console.print(Text(delta, style=style), end="", soft_wrap=True)
        self._mid_line = not delta.endswith("\n")

    def _end_line(self) -> None:
        if self._mid_line:
            self._console.print()
            self._mid_line = False
        self._stream = None

    def _line(self, text: Text) -> None:
        self._settle()
        self._end_line()
        self._console.print(text, soft_wrap=True)

    # -- tool calls ---------------------------------------------------------------------

    def _start_tool(self, event: ToolExecuteStartEvent) -> None:
        self._clear_status()
        self._end_line()
        row = _ToolRow(call=format_call(event.tool_name, event.arguments))
        self._rows[event.tool_call_id] = row
        self._call_ids.add(event.tool_call_id)
        if self._animate:
            self._refresh_batch()
        else:
            self._console.print(self._row_text(row), soft_wrap=True)

    def _progress(self, event: ToolExecuteProgressEvent) -> None:
        row = self._row(event.tool_call_id)
        done = f"{event.current:g}/{event.total:g}" if event.total else f"{event.current:g}"
        row.detail = f"{done} {event.message}" if event.message else done
        if self._animate:
            row.done = (event.current, event.total) if event.total else None
            self._refresh_batch()
        else:
            self._console.print(self._row_text(row), soft_wrap=True)

    def _partial(self, event: ToolExecutePartialEvent) -> None:
        # Plain mode waits for the result line; a terminal shows the newest piece in place.
        if self._animate and event.content.strip():
            self._row(event.tool_call_id).detail = preview(event.content.splitlines()[-1])
            self._refresh_batch()

    def _subagent(self, event: SubagentEvent) -> None:
        # A sub-agent's run shows in its tool call's row: its latest text, or the tool
        # it runs. Plain mode waits for the call's result line, like streamed output.
        if not self._animate:
            return
        inner: AgentEvent = event.event
        agent = event.agent_name
        while isinstance(inner, SubagentEvent):
            agent, inner = inner.agent_name, inner.event
        row = self._row(event.tool_call_id)
        match inner:
            case TextCompleteEvent() if inner.text.strip():
                row.detail = preview(f"{agent}: {inner.text.splitlines()[-1]}")
            case ToolExecuteStartEvent():
                row.detail = preview(f"{agent} → {format_call(inner.tool_name, inner.arguments)}")
            case _:
                return
        self._refresh_batch()

    def _finish_tool(
        self,
        call_id: str,
        name: str,
        state: Literal["ok", "error"],
        detail: str,
        duration: float,
    ) -> None:
        self._call_ids.add(call_id)
        row = self._row(call_id, name)
        row.state, row.detail, row.duration = state, preview(detail), duration
        if self._animate:
            self._refresh_batch()
        else:
            self._console.print(self._row_text(row), soft_wrap=True)
        if all(r.state != "running" for r in self._rows.values()):
            self._settle()

    def _row(self, call_id: str, name: str = "tool") -> _ToolRow:
        # A result can arrive without its start (a resumed stream): show it all the same.
        row = self._rows.get(call_id)
        if row is None:
            row = self._rows[call_id] = _ToolRow(call=f"{name}(…)")
        return row

    @staticmethod
    def _running_label(row: _ToolRow) -> Text:
        if row.done is not None:  # a bar (on a terminal), then the progress message
            message = row.detail.partition(" ")[2]
            return Text.assemble((row.call, "bold"), " ", bar(*row.done), (f" {message}", "cyan"))
        return Text.assemble((row.call, "bold"), (f" running {row.detail}".rstrip(), "cyan"))

    @classmethod
    def _row_text(cls, row: _ToolRow) -> Text:
        if row.state == "running":
            return Text.assemble("  … ", cls._running_label(row))
        icon, style = ("✓", "green") if row.state == "ok" else ("✗", "red")
        return Text.assemble(
            "  ",
            (icon, f"bold {style}"),
            " ",
            (row.call, "bold"),
            (f" {format_duration(row.duration)}", "dim"),
            " → ",
            (row.detail, "" if row.state == "ok" else style),
        )

    def _batch_view(self) -> RenderableType:
        # One screen line per call: a wrapped row would break the in-place updates.
        lines: list[RenderableType] = []
        for row in self._rows.values():
            if row.state == "running":
                label = self._running_label(row)
                label.no_wrap, label.overflow = True, "ellipsis"
                lines.append(Padding(Spinner("dots", text=label, style="cyan"), (0, 0, 0, 2)))
            else:
                text = self._row_text(row)
                text.no_wrap, text.overflow = True, "ellipsis"
                lines.append(text)
        return Group(*lines)

    def _refresh_batch(self) -> None:
        if self._batch is None:
            self._clear_status()
            self._batch = Live(console=self._console, refresh_per_second=12.5, transient=False)
            self._batch.start()
        self._batch.update(self._batch_view(), refresh=True)

    # -- live regions -------------------------------------------------------------------

    def _show_status(self, message: str) -> None:
        if not self._animate or self._batch is not None:
            return
        spinner = Spinner("dots", text=Text(message, style="dim"), style="cyan")
        if self._status is None:
            self._end_line()
            self._status = Live(spinner, console=self._console, transient=True)
            self._status.start()
        else:
            self._status.update(spinner, refresh=True)

    def _clear_status(self) -> None:
        if self._status is not None:
            self._status.stop()
            self._status = None

    def _settle(self) -> None:
        """Stop every live region; a tool batch stays on screen in its final state."""
        self._clear_status()
        if self._batch is not None:
            self._batch.update(self._batch_view(), refresh=True)
            self._batch.stop()
            self._batch = None
        self._rows.clear()

    # -- the end ------------------------------------------------------------------------

    def _end(self, event: AgentEndEvent) -> None:
        self.status = event.status
        if not self._wrote_text and event.output is not None:
            self._line(Text(render_output(event.output)))
        duration = 0.0 if self._started_at is None else self._clock() - self._started_at
        summary = format_summary(
            status=event.status,
            steps=self._steps,
            tool_calls=len(self._call_ids),
            usage=event.usage,
            duration=duration,
        )
        icon = {"completed": "✓", "awaiting_approval": "⏸"}.get(event.status, "✗")
        self._line(Text(f"{icon} {summary}", style=_STATUS_STYLE[event.status]))
