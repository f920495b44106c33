"""``Agent(subagents={...})``: named sub-agents offered as ``task_<name>`` tools.

Each entry becomes ``child.as_tool(name="task_<name>", ...)``: the same durable child run
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

from bastion.core import Model, UserError

if TYPE_CHECKING:
    from bastion.tools import Tool, ToolSource

    from ._agent import Agent
    from ._capability import Capability

__all__ = ["SubagentSpec", "task_tools"]

_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")


@dataclass(frozen=True, kw_only=True, slots=True)
class SubagentSpec:
    """A sub-agent described in place (``Agent(subagents={"explore": SubagentSpec(...)})``).

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
    tools: Sequence[Tool | Callable[..., Any] | ToolSource] = ()
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
    from ._agent import Agent  # the agent module builds on this one

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
            child.as_tool(
                name=f"task_{name}",
                forward_events="lifecycle",
                capability=capability,
                text_progress=True,
            )
        )
    return tools
