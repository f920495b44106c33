"""What a session needs of its agent (``SessionAgent``) and plugs into its runs (``Link``).

Sessions sit beside the agent layer: they name the agent by this shape only, and the
agent's loop calls the link (``bastion.agent.SessionLink``) at its drain points.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from bastion.core import Message, ModelResponse, RunContext
from bastion.stores import Stores
from bastion.tools import BeforeToolCall, Directive

if TYPE_CHECKING:
    from bastion.agent import AgentStream, RunConfig, RunState
    from bastion.context import Compaction, ContextConfig

__all__ = ["Link", "SessionAgent"]


class SessionAgent(Protocol):
    """What a session needs of its agent (``bastion.agent.Agent`` is one)."""

    @property
    def config(self) -> RunConfig:
        """The agent's config.

        A session reads its ``session_send_mode``, the ``clock`` leases are stamped with,
        and its ``store`` (``None``: sessions live in memory).
        """
        ...

    def stream(
        self,
        input: RunState | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        session_id: str | None = None,
        directive: Directive | None = None,
        session_link: Link | None = None,
        active_agent: str | None = None,
    ) -> AgentStream[Any]: ...

    @property
    def name(self) -> str:
        """The agent's name (the session's own agent)."""
        ...

    def reaches(self, name: str) -> bool:
        """True when a run can start with agent ``name`` active (this one, or a handoff's)."""
        ...

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        config: ContextConfig | None = None,
        keep_last: int | None = None,
    ) -> Compaction:
        """Compact a conversation now (``Agent.compact``)."""
        ...

    def resume_stream(self, run_id: str, *, session_link: Link | None = None) -> AgentStream[Any]:
        """Continue a journaled run (a session turn cut by a crash)."""
        ...

    async def stores(self) -> Stores: ...

    def serialize_state(self, state: RunState) -> str: ...

    def deserialize_state(self, text: str) -> RunState: ...


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
