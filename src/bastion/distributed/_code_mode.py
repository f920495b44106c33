"""Code mode in a workflow: ``code_execute`` and ``code_search`` are tool activities.

The workflow offers the model code mode's two tools, as the local catalog does; each call is
the tool activity. On the worker ``code_execute`` runs the script in the worker's sandbox,
and the script's tool calls go through the worker agent's own executor, inside that one
activity (they are one step of the run, as locally: the history records the script's
result, not each call it made).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING

from ._proxies import proxy_tool

if TYPE_CHECKING:
    from bastion.agent import RunConfig
    from bastion.tools import Tool

    from ._proxies import Activities

__all__ = ["advertised", "worker_tools"]


def worker_tools(config: RunConfig) -> Mapping[str, Tool]:
    """The tools the tool activity runs by name: code mode's two, then the agent's."""
    mode = config.code_mode
    registry = config.catalog.registry
    if mode is None:
        return registry
    return _Both({t.name: t for t in mode.tools}, registry)


class _Both(Mapping[str, "Tool"]):
    """Code mode's tools, then the registry's (live: read at each lookup)."""

    def __init__(self, first: Mapping[str, Tool], then: Mapping[str, Tool]) -> None:
        self._first = first
        self._then = then

    def __getitem__(self, name: str) -> Tool:
        found = self._first.get(name)
        return self._then[name] if found is None else found

    def __iter__(self) -> Iterator[str]:
        yield from self._first
        yield from (n for n in self._then if n not in self._first)

    def __len__(self) -> int:
        return sum(1 for _ in self)


def advertised(config: RunConfig, activities: Activities) -> tuple[Tool, ...] | None:
    """What the workflow's catalog shows the model instead of the tools (code mode's two)."""
    mode = config.code_mode
    if mode is None:
        return None
    return tuple(proxy_tool(t, activities) for t in mode.tools)
