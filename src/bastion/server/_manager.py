"""The runs this server process drives: start, resume, cancel, and drain on shutdown."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import JsonValue

from bastion.agent import Agent, AgentStream
from bastion.stores import Stores
from bastion.tools import Directive

from ._errors import Conflict, NotFound, Unavailable
from ._events import EventLog, Hub
from ._pump import pump

__all__ = ["Live", "RunManager"]

_log = logging.getLogger("bastion.server")


@dataclass(frozen=True, kw_only=True, slots=True)
class Live:
    """A run segment in flight in this process."""

    stream: AgentStream[Any]
    task: asyncio.Task[None]
    agent: str
    tenant: str | None


class RunManager:
    """Starts and resumes runs of the served agents in background tasks."""

    def __init__(
        self, agents: Mapping[str, Agent[Any, Any]], stores: Stores, *, drain_timeout: float
    ) -> None:
        self.agents = dict(agents)
        self.stores = stores
        self.log = EventLog(stores.artifacts)
        self.hub = Hub()
        self.drain_timeout = drain_timeout
        self.refusing = asyncio.Event()  # set when a drain starts: no new work from then on
        self.live: dict[str, Live] = {}

    def agent(self, name: str | None) -> Agent[Any, Any]:
        """The served agent ``name`` (the only one when ``None``).

        Raises:
            NotFound: No agent of that name is served.
            UserError: ``None`` while several agents are served.
        """
        if name is None and len(self.agents) == 1:
            return next(iter(self.agents.values()))
        if name is None:
            raise NotFound(f"Name the agent: one of {sorted(self.agents)}.")
        agent = self.agents.get(name)
        if agent is None:
            raise NotFound(f"No agent {name!r} is served here (served: {sorted(self.agents)}).")
        return agent

    async def start(
        self,
        agent: Agent[Any, Any],
        input: str,
        *,
        tenant: str | None,
        session_id: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> str:
        """Start a run; return its id once its first event is out.

        Raises:
            Unavailable: The server is draining.
            UserError: The agent rejects the input or options.
        """
        self._check_open()
        values = dict(metadata) if metadata is not None else None
        stream = agent.stream(input, tenant_id=tenant, session_id=session_id, metadata=values)
        await self.launch(stream, agent.name, tenant)
        return stream.run_id

    async def resume(
        self, agent: Agent[Any, Any], run_id: str, directive: Directive, tenant: str | None
    ) -> None:
        """Resume a suspended run with the decisions in ``directive``.

        Raises:
            Unavailable: The server is draining.
            Conflict: The run is in flight in this process.
            UserError: The directive does not decide exactly what the run waits for.
        """
        self._check_open()
        if run_id in self.live:
            raise Conflict(f"Run {run_id} is in flight; it can be resumed once it suspends.")
        await self.launch(agent.resume_stream(run_id, directive=directive), agent.name, tenant)

    def cancel(self, run_id: str) -> None:
        """Abort a run in flight here (its pending approvals are denied).

        Raises:
            NotFound: The run is not in flight in this process.
        """
        live = self.live.get(run_id)
        if live is None:
            raise NotFound(f"Run {run_id} is not in flight on this server.")
        live.stream.abort()

    async def drain(self) -> None:
        """Refuse new work and let runs in flight end; idempotent.

        Runs still going after ``drain_timeout`` are stopped after their current step, with
        calls waiting for approval held (the run stays ``awaiting_approval``).
        """
        self.refusing.set()
        tasks = [live.task for live in self.live.values()]
        if tasks:
            _, pending = await asyncio.wait(tasks, timeout=self.drain_timeout)
            for live in list(self.live.values()):
                if live.task in pending:
                    live.stream.abort(drain=True, on_pending_approvals="hold")
            await asyncio.gather(*pending, return_exceptions=True)
        self.hub.close_all()

    @property
    def draining(self) -> bool:
        """Whether a drain has started (new runs are refused)."""
        return self.refusing.is_set()

    def _check_open(self) -> None:
        if self.draining:
            raise Unavailable("The server is shutting down; start the run on another one.")

    async def launch(self, stream: AgentStream[Any], agent: str, tenant: str | None) -> None:
        """Run ``stream`` in the background, its events logged; return after its first.

        Raises:
            Exception: What the stream raised before its first event (``UserError``,
                ``RunBusy``...): nothing runs then.
        """
        try:
            first = await anext(aiter(stream))  # errors of the start surface to the caller
        except BaseException:
            await stream.aclose()
            raise
        self.hub.open(stream.run_id)
        clock = self.agents[agent].config.clock  # retries wait on the agent's clock
        task = asyncio.create_task(pump(stream, first, self.log, self.hub, clock))
        self.live[stream.run_id] = Live(stream=stream, task=task, agent=agent, tenant=tenant)
        task.add_done_callback(lambda t: self._ended(stream.run_id, t))

    def _ended(self, run_id: str, task: asyncio.Task[None]) -> None:
        self.live.pop(run_id, None)
        if not task.cancelled() and task.exception() is not None:
            _log.error("run %s failed in the server", run_id, exc_info=task.exception())
