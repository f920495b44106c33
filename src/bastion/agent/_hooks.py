"""Hooks: observers of a run (``AgentHooks``) and decision points in the loop (``LoopHooks``).

Subclass and override what you need; methods may be sync or async. Only overridden methods
are called, so unused hooks cost nothing.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from bastion.core import Message, Model, ModelResponse, RunContext, Usage
from bastion.tools import BeforeToolCall, SkipTool

if TYPE_CHECKING:
    from ._result import RunResult
    from ._step_overrides import StepOverrides

__all__ = ["AgentHooks", "LoopHooks", "SessionLink", "maybe_await", "overridden"]

T = TypeVar("T")


class AgentHooks:
    """Observers of a run's lifecycle. Their return values are ignored."""

    def before_run(self, ctx: RunContext[Any]) -> Awaitable[None] | None:
        """Called once before the first step."""

    def after_run(self, ctx: RunContext[Any], result: RunResult[Any]) -> Awaitable[None] | None:
        """Called after a run that completed successfully."""

    def on_tool_call(
        self, ctx: RunContext[Any], tool_name: str, args: Mapping[str, object]
    ) -> Awaitable[None] | None:
        """Called before each tool call with validated arguments runs."""

    def on_error(self, ctx: RunContext[Any], error: BaseException) -> Awaitable[None] | None:
        """Called when the run fails with an exception."""


class LoopHooks:
    """Decision points inside the model → tools → model loop."""

    def prepare_step(
        self, ctx: RunContext[Any], step: int
    ) -> Awaitable[Model | str | StepOverrides | None] | Model | str | StepOverrides | None:
        """Return a model (or ``"provider:model"``) for this step, or None for the usual choice.

        Return :class:`StepOverrides` to also change this step's ``tool_choice``, settings
        or advertised tools. A model given here beats every other model preference (tool
        hints, the agent's preferred model); fallback models still apply.
        """

    def before_llm_call(
        self, ctx: RunContext[Any], messages: list[Message], step: int
    ) -> Awaitable[list[Message] | None] | list[Message] | None:
        """Return replacement messages for this model call, or None to keep them."""

    def after_llm_call(
        self, ctx: RunContext[Any], response: ModelResponse, step: int
    ) -> Awaitable[None] | None:
        """Called with each model response."""

    def before_tool_exec(
        self, ctx: RunContext[Any], tool_name: str, args: Mapping[str, object]
    ) -> Awaitable[SkipTool | None] | SkipTool | None:
        """Return ``SkipTool(result)`` to skip the tool and use ``result`` instead."""

    def after_tool_exec(
        self, ctx: RunContext[Any], tool_name: str, result: str
    ) -> Awaitable[str | None] | str | None:
        """Return a string to replace the tool's result."""

    def on_roundtrip_complete(
        self, ctx: RunContext[Any], step: int, usage: Usage
    ) -> Awaitable[bool | None] | bool | None:
        """Called after each step's tools ran; return True to stop the run (status ``stopped``)."""


class SessionLink(Protocol):
    """What a session (``bastion.sessions``) plugs into the runs of its agent.

    ``state`` becomes ``ctx.session_state``; ``before_model_call`` runs before every model
    call of the run and may append (steering) messages to the run's transcript;
    ``after_model_call`` runs once the call's response (message, usage, finish reason) is in
    the transcript, before its tool calls are decided.
    """

    @property
    def state(self) -> dict[str, Any]:
        """The session's persisted state."""
        ...

    @property
    def before_tool_call(self) -> BeforeToolCall:
        """The session's decision on each tool call, asked before the agent's own hooks."""
        ...

    async def before_model_call(self, ctx: RunContext[Any], messages: list[Message]) -> None:
        """Called before each model call with the run's (mutable) transcript."""
        ...

    async def after_model_call(self, ctx: RunContext[Any], response: ModelResponse) -> None:
        """Called after each model call, once its message joined ``ctx.messages``."""
        ...


def overridden(hooks: object | None, base: type, name: str) -> bool:
    """Return True when ``hooks`` overrides ``base.name``."""
    if hooks is None:
        return False
    return getattr(type(hooks), name, None) is not getattr(base, name)


async def maybe_await(value: Awaitable[T] | T) -> T:
    """Await ``value`` if it is awaitable."""
    if inspect.isawaitable(value):
        return await value
    return value
