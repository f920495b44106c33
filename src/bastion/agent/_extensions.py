"""What composed agents plug into an ``Agent`` with: protocols defined here, met above.

The agent layer knows nothing of the multi-agent layer (``bastion.multi``) that builds on
it; where an ``Agent`` must work with what that layer makes, it asks through these:

- :class:`ToolFactory`: an entry of ``Agent(tools=[...])`` that makes the agent's tools
  once the agent's name and model are known (``subagents({...})`` is one);
- :class:`ToolsetCheck`: the function of a tool that refuses a tool set it cannot work in
  (the sub-agent tools of ``as_tool`` refuse an agent that runs itself, say).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Protocol, TypeVar, runtime_checkable

if TYPE_CHECKING:
    from bastion.core import Model
    from bastion.tools import Tool

    from ._governance import AgentGovernance

__all__ = ["ToolFactory", "ToolsetCheck", "check_toolset", "made_tools"]

_T = TypeVar("_T")


@runtime_checkable
class ToolFactory(Protocol):
    """An entry of ``Agent(tools=[...])`` that makes tools for the agent it is given to."""

    def tools_for(self, owner: str, model: Model) -> Sequence[Tool]:
        """The tools of agent ``owner``, whose model is ``model``.

        Raises:
            UserError: The factory cannot make tools for that agent.
        """
        ...


@runtime_checkable
class ToolsetCheck(Protocol):
    """A tool's function that checks the tool set of the agent it is a tool of."""

    def check_toolset(
        self, owner: str, tools: Mapping[str, Tool], governance: AgentGovernance | None
    ) -> None:
        """Refuse ``tools`` (of agent ``owner``) when this tool cannot work among them.

        Raises:
            UserError: It cannot.
        """
        ...


def made_tools(owner: str, entries: Sequence[_T | ToolFactory], model: Model) -> list[_T | Tool]:
    """``entries`` with each :class:`ToolFactory` replaced by the tools it makes."""
    tools: list[_T | Tool] = []
    for entry in entries:
        if isinstance(entry, ToolFactory):
            tools.extend(entry.tools_for(owner, model))
        else:
            tools.append(entry)
    return tools


def check_toolset(
    owner: str, tools: Mapping[str, Tool], governance: AgentGovernance | None
) -> None:
    """Let every kind of :class:`ToolsetCheck` among ``tools`` check them (once per kind).

    Raises:
        UserError: A tool cannot work among the others.
    """
    kinds: set[type] = set()
    for tool in tools.values():
        check = tool.function
        if isinstance(check, ToolsetCheck) and type(check) not in kinds:
            kinds.add(type(check))
            check.check_toolset(owner, tools, governance)
