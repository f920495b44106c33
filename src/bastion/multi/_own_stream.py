"""``OwnStream``: the run handle of agent-likes that are not an ``Agent`` (teams, external agents).

An :class:`~bastion.agent.AgentRunHandle`, like :class:`~bastion.agent.AgentStream`: async
iteration of typed events (numbered ``seq`` 1, 2, …), ``run_id``, ``result`` (a
:class:`~bastion.agent.RunResult`) once ``agent.end`` has passed, ``drain()``,
``abort(drain=...)`` and ``async with``. The events come from a ``body`` generator (owned by
``_team`` / ``_external``), which reads :attr:`aborted` and registers what an abort must stop
with :meth:`on_abort`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Callable
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bastion.agent import AgentRunHandle, RunResult
from bastion.core import AgentEndEvent, AgentEvent

if TYPE_CHECKING:
    from bastion.core import EventBus

__all__ = ["OwnStream"]


class OwnStream(AgentRunHandle[RunResult[Any]]):
    """The events of one run of a team or an external agent; then its result."""

    __slots__ = (
        "_body",
        "_bus",
        "_gen",
        "_listeners",
        "_run_id",
        "_seq",
        "aborted",
        "agent_name",
        "drain_requested",
    )

    def __init__(
        self,
        run_id: str,
        agent_name: str,
        body: Callable[[OwnStream], AsyncGenerator[AgentEvent, None]],
        bus: EventBus | None = None,
    ) -> None:
        super().__init__()
        self._run_id = run_id
        self.agent_name = agent_name
        self._body = body
        self._bus = bus
        self._gen: AsyncGenerator[AgentEvent, None] | None = None
        self._seq = 0
        self._listeners: list[Callable[[bool], None]] = []
        self.aborted = False
        self.drain_requested = False

    @property
    def run_id(self) -> str:
        """Id of the run."""
        return self._run_id

    def set_result(self, result: RunResult[Any]) -> None:
        """Called by the body before its ``agent.end`` event."""
        self._result = result

    async def __anext__(self) -> AgentEvent:
        if self._gen is None:
            self._gen = self._body(self)
        event = await self._gen.__anext__()
        self._seq += 1
        event = replace(event, seq=self._seq)
        if self._bus is not None:
            self._bus.emit(event.type, event)
        if isinstance(event, AgentEndEvent) and self._result is None:
            raise AssertionError("the body must set_result before agent.end")  # a bug of ours
        return event

    def on_abort(self, listener: Callable[[bool], None]) -> Callable[[], None]:
        """Call ``listener(drain)`` on abort; returns a function removing it."""
        self._listeners.append(listener)
        if self.aborted:
            listener(self.drain_requested)
        return lambda: self._listeners.remove(listener) if listener in self._listeners else None

    def abort(self, *, drain: bool = False) -> None:
        """Stop the run; it ends with status ``aborted`` (``drain``: after the current step)."""
        if self._result is not None or (self.aborted and (drain or not self.drain_requested)):
            return
        self.aborted = True
        self.drain_requested = drain
        for listener in tuple(self._listeners):
            listener(drain)

    async def aclose(self) -> None:
        """Stop iterating; a run not yet ended is aborted first so it ends cleanly."""
        if self._gen is not None and self._result is None:
            self.abort()
            async for _ in self:
                pass
