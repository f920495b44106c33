"""Progress bars of long work on a terminal: a graph's nodes and its map nodes' items.

``bar`` draws one bar as text (the run renderer puts it in a tool call's row when the tool
reports progress with a total, as a fan-out tool does per finished child).
:class:`GraphProgress` keeps a live region under ``bastion graph run``'s lines: the root
graph's nodes done out of its nodes, and each map node's items done out of its items. On
anything but a terminal it draws nothing (the lines say it all, and ``--json`` is JSON).
"""

from __future__ import annotations

from dataclasses import dataclass
from types import TracebackType
from typing import TYPE_CHECKING, Any, Self, cast

from rich.console import Console, Group
from rich.live import Live
from rich.text import Text

from bastion.core import UserError

if TYPE_CHECKING:  # the run renderer imports ``bar``: no graph machinery for it
    from bastion.graph import Graph, GraphSignal
    from bastion.graph._nodes import NodeSpec

__all__ = ["GraphProgress", "bar"]

_WIDTH = 24


def bar(done: float, total: float, *, width: int = _WIDTH) -> Text:
    """``━━━━━━━━╺━━━━━━━  3/5``: ``done`` of ``total`` as a bar and a count."""
    share = 0.0 if total <= 0 else min(max(done / total, 0.0), 1.0)
    filled = round(share * width)
    return Text.assemble(
        ("━" * filled, "green" if share >= 1 else "magenta"),
        ("╺" if 0 < filled < width else "", "magenta"),
        ("━" * (width - filled - (0 < filled < width)), "grey23"),
        f"  {done:g}/{total:g}",
    )


@dataclass(slots=True)
class _Map:
    """A map node's items: how many there are, and how many finished."""

    total: int | None
    done: int = 0


class GraphProgress:
    """The live progress of a graph execution on ``console`` (a no-op off a terminal).

    Use it as a context manager so the live region is closed however the execution ends;
    pass every signal to :meth:`handle`.
    """

    def __init__(self, graph: Graph, console: Console) -> None:
        self.graph = graph
        self.finished: set[str] = set()
        self.maps: dict[str, _Map] = {}
        self._live = (
            Live(console=console, refresh_per_second=8, transient=False)
            if console.is_terminal
            else None
        )

    def __enter__(self) -> Self:
        if self._live is not None:
            self._live.start()
            self._live.update(self.view(), refresh=True)
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        if self._live is not None:
            self._live.update(self.view(), refresh=True)
            self._live.stop()

    def handle(self, signal: GraphSignal) -> None:
        """Count one signal; the bars are drawn again when it changed a count."""
        ancestry = tuple(getattr(signal, "ancestry", ()))
        kind, key = signal.type, str(getattr(signal, "node_key", ""))
        if kind == "node.before" and not ancestry and key not in self.maps:
            spec = self.graph.specs.get(key)
            if spec is not None and spec.kind == "map":
                inputs = list(cast("tuple[Any, ...]", getattr(signal, "inputs", ())))
                self.maps[key] = _Map(total=_items(spec, inputs))
        elif kind == "node.after" and not ancestry:
            self.finished.add(key)
        elif kind == "graph.after" and len(ancestry) == 1 and ancestry[0] in self.maps:
            self.maps[ancestry[0]].done += 1  # one element's execution ended
        else:
            return
        if self._live is not None:
            self._live.update(self.view(), refresh=True)

    def view(self) -> Group:
        """The bars: the graph's nodes, then each map node's items."""
        nodes = len(self.graph.specs)
        lines = [Text.assemble(("nodes ", "bold"), bar(len(self.finished), nodes))]
        for key, items in self.maps.items():
            total = items.total if items.total is not None else items.done
            lines.append(Text.assemble((f"{key} ", "bold"), bar(items.done, total), " items"))
        return Group(*lines)


def _items(spec: NodeSpec, inputs: list[Any]) -> int | None:
    if spec.count is None:
        return None
    try:
        return spec.count(inputs)
    except UserError:  # the node fails on these inputs: its error line says why
        return None
