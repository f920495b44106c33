"""The renderer of ``bastion graph run|resume``: one line per graph signal, as it happens.

Nodes starting, finishing (with a preview of the output), failing or waiting; the tool
calls and answers of agent nodes; custom ``x:`` signals; the execution's end. On a terminal
the lines are colored; in plain mode (``--plain``, pipes, tests) they are printed once,
without ANSI codes. Knows nothing of graphs, only of signals.
"""

from __future__ import annotations

import json

from rich.console import Console
from rich.text import Text

from bastion.graph import (
    AgentEventSignal,
    CustomSignal,
    GraphAfter,
    GraphBefore,
    GraphError,
    GraphSignal,
    NodeAfter,
    NodeBefore,
    NodeError,
)

from ._format import preview

__all__ = ["GraphRenderer"]

_STATUS_STYLE = {"completed": "bold green", "suspended": "bold yellow"}


def _value(value: object, width: int = 60) -> str:
    return preview(json.dumps(value, ensure_ascii=False, default=str), width)


class GraphRenderer:
    """Prints graph signals to ``console``, nested graphs indented under their node."""

    def __init__(self, console: Console) -> None:
        self.console = console

    def _line(self, depth: int, text: str, style: str = "") -> None:
        self.console.print(Text("  " * depth + text, style=style), soft_wrap=True)

    def handle(self, signal: GraphSignal) -> None:
        """Print one signal (governance signals other than denials are left out)."""
        depth = len(getattr(signal, "ancestry", ()))
        match signal:
            case GraphBefore():
                self._line(depth, f"▶ {signal.key}  {signal.graph_id}", "bold")
            case NodeBefore():
                self._line(depth + 1, f"● {signal.node_key} (round {signal.round})", "dim")
            case NodeAfter():
                self._line(depth + 1, f"✓ {signal.node_key} → {_value(signal.output)}", "green")
            case NodeError() if signal.kind == "suspended":
                self._line(depth + 1, f"⏸ {signal.node_key} waits: {signal.error}", "yellow")
            case NodeError():
                self._line(depth + 1, f"✗ {signal.node_key} {signal.kind}: {signal.error}", "red")
            case AgentEventSignal():
                self._agent(depth + 2, signal)
            case CustomSignal():
                self._line(depth + 1, f"x:{signal.name} {_value(dict(signal.data))}", "cyan")
            case GraphError():
                self._line(depth, f"✗ {signal.key}: {signal.error}", "red")
            case GraphAfter():
                style = _STATUS_STYLE.get(signal.status, "bold red")
                self._line(depth, f"■ {signal.key} {signal.status}", style)
            case _:
                kind = str(getattr(signal, "type", ""))
                if kind in ("oracle.denied", "oracle.exceeded"):
                    self._line(depth + 1, f"! {kind} {getattr(signal, 'node_key', '')}", "red")

    def _agent(self, depth: int, signal: AgentEventSignal) -> None:
        event = signal.event
        kind = event.type
        if kind == "tool.execute.start":
            name = str(getattr(event, "tool_name", ""))
            self._line(depth, f"{signal.node_key}: tool {name}", "dim")
        elif kind == "tool.approval.requested":
            name = str(getattr(event, "tool_name", ""))
            self._line(depth, f"{signal.node_key}: {name} waits for approval", "yellow")
        elif kind == "text.complete":
            text = str(getattr(event, "text", ""))
            self._line(depth, f"{signal.node_key}: {preview(text, 72)}", "dim")
