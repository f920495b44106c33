"""A graph as a Mermaid flowchart: nodes by kind, conditional edges dashed and labelled."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ._graph import Graph

__all__ = ["to_mermaid"]

_SHAPES = {"function": ("[", "]"), "node": ("[[", "]]"), "agent": ("([", "])"), "map": ("[/", "/]")}


def to_mermaid(graph: Graph) -> str:
    """Return ``flowchart TD`` source for ``graph`` (entries from a start circle)."""
    topology = graph.compile()
    lines = ["flowchart TD", "    __start__((start))"]
    for key, spec in graph.specs.items():
        left, right = _SHAPES[spec.kind]
        label = key if spec.kind != "map" else f"{key} (map)"
        lines.append(f'    {key}{left}"{label}"{right}')
    lines.extend(f"    __start__ --> {entry}" for entry in topology.entries)
    back = set(topology.cycles)
    for edge in graph.edges:
        arrow = "-.->" if edge.when is not None else "-->"
        label = edge.label if edge.when is not None else ("loop" if edge in back else "")
        text = f"|{label}|" if label else ""
        lines.append(f"    {edge.source} {arrow}{text} {edge.target}")
    return "\n".join(lines) + "\n"
