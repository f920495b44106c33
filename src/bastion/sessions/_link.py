"""What a session plugs into each of its runs (``Link``).

Sessions sit beside the agent layer: they run a :class:`~bastion.agent.Agent` (named in
annotations only, never imported at run time), and the agent's loop calls the link
(``bastion.agent.SessionLink``) at its drain points.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from bastion.core import Message, ModelResponse, RunContext
from bastion.tools import BeforeToolCall

if TYPE_CHECKING:
    pass

__all__ = ["Link"]


@dataclass(slots=True)
class Link:
    """The session's side of each of its runs.

    That is ``ctx.session_state``, the two drain points, and the session's decision on
    each tool call (asked before the agent's own ``before_tool_call`` hooks).
    """

    drain: Callable[[list[Message]], Awaitable[None]]
    stepped: Callable[[list[Message], ModelResponse], Awaitable[None]]
    before_tool_call: BeforeToolCall
    state: dict[str, Any] = field(default_factory=dict[str, Any])

    async def before_model_call(self, ctx: RunContext[Any], messages: list[Message]) -> None:
        await self.drain(messages)

    async def after_model_call(self, ctx: RunContext[Any], response: ModelResponse) -> None:
        await self.stepped(ctx.messages, response)
