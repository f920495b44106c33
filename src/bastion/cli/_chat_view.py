"""How ``bastion chat`` shows a session: streamed text, folded reasoning, tool-call panels."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from rich.console import Console
from rich.panel import Panel
from rich.text import Text

from bastion.core import AssistantMessage, Usage
from bastion.sessions import TurnAborted

from ._format import format_call

if TYPE_CHECKING:
    from bastion.sessions import (
        MessageAdded,
        Session,
        SessionError,
        StepDone,
        TextDelta,
        ToolResult,
    )
    from bastion.tools import Tool, ToolCallRequest

__all__ = ["ChatView"]

_RESULT_CHARS = 600


@dataclass(kw_only=True, slots=True)
class ChatView:
    """Listens to one session at a time and writes what happens to ``console``."""

    console: Console
    usage: Usage = field(default_factory=Usage)
    requests: int = 0
    reasoning: str = ""
    """The last answer's reasoning, folded to one line until ``/reasoning`` shows it."""
    _calls: dict[str, str] = field(default_factory=dict[str, str])
    _mid_line: bool = False

    def attach(self, session: Session) -> None:
        """Show ``session``'s events from now on."""
        session.on("text_delta", self._delta)
        session.on("message", self._message)
        session.on("step", self._step)
        session.on("tool_call", self._tool_call)
        session.on("tool_result", self._tool_result)
        session.on("error", self._error)

    def end_line(self) -> None:
        """Finish a line of streamed text."""
        if self._mid_line:
            self.console.file.write("\n")
            self.console.file.flush()
            self._mid_line = False

    def note(self, text: str, style: str = "dim") -> None:
        """One line of the chat's own (not the model's)."""
        self.end_line()
        self.console.print(Text(text, style=style), soft_wrap=True)

    def _delta(self, event: TextDelta) -> None:
        self.console.file.write(event.delta)
        self.console.file.flush()
        self._mid_line = True

    def _message(self, event: MessageAdded) -> None:
        message = event.message
        if isinstance(message, AssistantMessage) and message.reasoning:
            self.reasoning = message.reasoning
            words = len(message.reasoning.split())
            self.note(f"▸ reasoning folded ({words} words): /reasoning shows it")

    def _step(self, event: StepDone) -> None:
        self.requests += 1
        self.usage = self.usage + event.usage

    def _tool_call(self, request: ToolCallRequest) -> None:
        self._calls[request.call.id] = format_call(request.call.name, request.call.arguments)

    def _tool_result(self, event: ToolResult) -> None:
        self.end_line()
        title = self._calls.pop(event.call_id, event.name)
        body = event.result if len(event.result) <= _RESULT_CHARS else event.result[:_RESULT_CHARS]
        style = "red" if event.is_error else "green"
        label = "failed" if event.is_error else "done"
        panel = Panel(Text(body), title=f"tool {title}", subtitle=label, border_style=style)
        self.console.print(panel)

    def _error(self, event: SessionError) -> None:
        if isinstance(event.error, TurnAborted):
            self.note("cancelled: the session goes on", "yellow")


def describe_tool(name: str, tool: Tool) -> str:
    """One line about a tool for ``/tools``."""
    approval = ", needs approval" if tool.needs_approval else ""
    summary = (tool.description or "").strip().splitlines()
    return f"{name}  ({tool.side_effect_class}{approval})  {summary[0] if summary else ''}"
