"""The agent a served session talks to: the served agent, its turns' runs recorded.

Each turn's run is tenant-scoped and its events are recorded like a served run's, so
``/runs/{id}/events`` follows a turn too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from bastion.core import AgentEvent, EventBus, Message
from bastion.stores import Stores
from bastion.tools import Directive

from ._events import EventLog, Hub, LoggedEvent
from ._recorder import Recorder

if TYPE_CHECKING:
    from bastion.agent import Agent, AgentStream, RunConfig, RunState
    from bastion.context import Compaction, ContextConfig
    from bastion.sessions._link import Link

__all__ = ["TurnAgent"]


class TurnAgent:
    """A :class:`bastion.sessions.SessionAgent` over a served agent.

    ``on_run`` (set it) is told the id of each run a turn starts or resumes.
    """

    def __init__(
        self,
        agent: Agent[Any, Any],
        *,
        tenant: str | None,
        log: EventLog,
        hub: Hub,
    ) -> None:
        self._agent = agent
        self._tenant = tenant
        self._log = log
        self._hub = hub
        self.on_run: Callable[[str], None] = _ignore
        self._recorders: dict[str, Recorder] = {}

    @property
    def name(self) -> str:
        """The served agent's name."""
        return self._agent.name

    @property
    def config(self) -> RunConfig:
        """The served agent's config."""
        return self._agent.config

    def reaches(self, name: str) -> bool:
        """True when a turn can start with agent ``name`` active (``Agent.reaches``)."""
        return self._agent.reaches(name)

    async def stores(self) -> Stores:
        """The agent's store, opened."""
        return await self._agent.stores()

    def serialize_state(self, state: RunState) -> str:
        """A run state as JSON text."""
        return self._agent.serialize_state(state)

    def deserialize_state(self, text: str) -> RunState:
        """A run state from JSON text."""
        return self._agent.deserialize_state(text)

    def stream(
        self,
        input: RunState | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        session_id: str | None = None,
        directive: Directive | None = None,
        session_link: Link | None = None,
        active_agent: str | None = None,
    ) -> AgentStream[Any]:
        """A turn's run (or its resumption), for the caller's tenant, its events recorded."""
        config = dataclasses.replace(self._agent.config, event_bus=self._bus())
        if input is None:
            stream = self._agent.stream(
                None, message_history=message_history, session_id=session_id,
                tenant_id=self._tenant, session_link=session_link, config=config,
                active_agent=active_agent,
            )  # fmt: skip
        else:
            stream = self._agent.stream(
                input, directive=directive, session_link=session_link, config=config
            )
        self.on_run(stream.run_id)
        return stream

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        config: ContextConfig | None = None,
        keep_last: int | None = None,
    ) -> Compaction:
        """Compact a session's conversation now (``session.compact``)."""
        return await self._agent.compact(messages, config=config, keep_last=keep_last)

    def resume_stream(self, run_id: str, *, session_link: Link | None = None) -> AgentStream[Any]:
        """Continue a turn's run cut by a crash, for the caller's tenant, its events recorded."""
        config = dataclasses.replace(self._agent.config, event_bus=self._bus())
        stream = self._agent.resume_stream(run_id, session_link=session_link, config=config)
        self.on_run(stream.run_id)
        return stream

    def _bus(self) -> EventBus:
        bus = EventBus().on("*", self._record)
        mine = self._agent.config.event_bus
        if mine is not None:  # the agent's own observers still see every event
            bus.on("*", lambda event: mine.emit(event.type, event))
        return bus

    def _record(self, event: AgentEvent) -> None:
        recorder = self._recorders.get(event.run_id)
        if recorder is None:
            recorder = Recorder(event.run_id, self._log, self._hub, self._agent.config.clock)
            self._recorders[event.run_id] = recorder
        recorder.add(LoggedEvent.of(event))
        if event.type == "agent.end":  # this segment of the run is over
            del self._recorders[event.run_id]
            recorder.close()


def _ignore(run_id: str) -> None:
    """No one listens to runs starting."""
