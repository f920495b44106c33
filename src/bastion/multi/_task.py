"""``Agent(tools=[subagents({...})])``: named sub-agents offered as ``task_<name>`` tools.

Each entry becomes ``as_tool(child, name="task_<name>", ...)``: the same durable child run
as any sub-agent (``_child.py``), with the child's text forwarded as the tool's progress
(``tool.execute.progress``) rather than as ``subagent.event`` text pieces. An entry is an
``Agent``, or a :class:`SubagentSpec` built into one here, on the parent's model unless it
names its own.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from bastion.agent import Agent
from bastion.core import Model, UserError

from ._as_tool import as_tool

if TYPE_CHECKING:
    from bastion.agent._capability import Capability
    from bastion.tools import Tool, ToolSource

__all__ = ["SubagentSpec", "Subagents", "subagents", "task_tools"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, kw_only=True, slots=True)
class SubagentSpec:
    """A sub-agent described in place (``subagents({"explore": SubagentSpec(...)})``).

    Attributes:
        description: What the parent's model reads about the ``task_<name>`` tool.
        instructions: The sub-agent's instructions.
        tools: Its own tools (none of the parent's).
        model: Its model (default: the parent's).
        max_steps: Its step limit (default: the ``Agent`` default).
        capability: ``read_only`` leaves out its tools that may change something.
    """

    description: str = ""
    instructions: str = ""
    tools: Sequence[Tool | Callable[..., object] | ToolSource] = ()
    model: Model | str | None = None
    max_steps: int = 50
    capability: Capability = "full"


def task_tools(
    owner: str, subagents: Mapping[str, Agent[Any, Any] | SubagentSpec], model: Model
) -> list[Tool]:
    """The ``task_<name>`` tools of agent ``owner``, whose model is ``model``.

    Raises:
        UserError: A name that is not 1-64 letters, digits, ``_`` or ``-``, or an entry
            that is neither an ``Agent`` nor a ``SubagentSpec``.
    """
    if not isinstance(subagents, Mapping):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"Agent {owner!r}: subagents must be a dict of name to Agent or spec.")
    tools: list[Tool] = []
    for name, entry in subagents.items():
        if not isinstance(name, str) or not _NAME.match(name):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"Agent {owner!r}: sub-agent name {name!r} must be 1-64 letters, digits, "
                "'_' or '-' (its tool is task_<name>)."
            )
        capability: Capability = "full"
        if isinstance(entry, SubagentSpec):
            capability = entry.capability
            child = Agent(
                name,
                model=entry.model if entry.model is not None else model,
                instructions=entry.instructions,
                tools=entry.tools,
                description=entry.description,
                max_steps=entry.max_steps,
            )
        elif isinstance(entry, Agent):  # pyright: ignore[reportUnnecessaryIsInstance]
            child = entry
        else:
            raise UserError(
                f"Agent {owner!r}: sub-agent {name!r} must be an Agent or a SubagentSpec, "
                f"got {entry!r}."
            )
        tools.append(
            as_tool(
                child,
                name=f"task_{name}",
                forward_events="lifecycle",
                capability=capability,
                text_progress=True,
            )
        )
    return tools


@dataclass(frozen=True, slots=True)
class Subagents:
    """Named sub-agents, made into ``task_<name>`` tools by the agent they are given to."""

    entries: Mapping[str, Agent[Any, Any] | SubagentSpec]

    def tools_for(self, owner: str, model: Model) -> list[Tool]:
        """The ``task_<name>`` tools of agent ``owner`` (specs without a model run on ``model``).

        Raises:
            UserError: See :func:`task_tools`.
        """
        return task_tools(owner, self.entries, model)


def subagents(entries: Mapping[str, Agent[Any, Any] | SubagentSpec]) -> Subagents:
    """Named sub-agents for ``Agent(tools=[subagents({...})])``.

    Each is offered to the agent's model as a ``task_<name>`` tool: an ``Agent``, or a
    :class:`SubagentSpec` (run on that agent's model unless it names one). The sub-agent's
    text arrives as the call's progress. See ``docs/multi-agent.md``.
    """
    return Subagents(entries)
