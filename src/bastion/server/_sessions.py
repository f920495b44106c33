"""The sessions a server serves, tenant-scoped: created here, reopened from the store.

A session created through the server has an owner record in the artifact store (role
``session``, under ``session-owner:<id>``): its agent, tenant, default send mode and
creation time. Sessions without one (made by the library directly) are not served.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

from bastion.core import new_id
from bastion.sessions import Session
from bastion.stores import ArtifactStore, SessionStore

from ._auth import Caller
from ._errors import Conflict, NotFound, Unavailable
from ._events import LoggedEvent
from ._manager import RunManager
from ._recorder import Recorder
from ._served_session import ServedSession, follow_session, session_key
from ._session_models import SessionList
from ._turn_events import TurnEvents
from ._wire import JsonValue, loads_object

__all__ = ["Owner", "Sessions"]

_ROLE = "session"
_SCAN = 100


def _owner_key(session_id: str) -> str:
    return f"session-owner:{session_id}"


@dataclass(frozen=True, kw_only=True, slots=True)
class Owner:
    """Whose a served session is, and how it was created."""

    agent: str
    tenant: str | None
    send_mode: Literal["steer", "queue"] | None
    created_at: datetime

    def dumps(self) -> str:
        """The record as JSON text."""
        return json.dumps(
            {
                "agent": self.agent,
                "tenant": self.tenant,
                "send_mode": self.send_mode,
                "created_at": self.created_at.isoformat(),
            }
        )

    @classmethod
    def loads(cls, text: str) -> Owner:
        """A record written by :meth:`dumps`."""
        data = loads_object(text, "A session's owner record")
        tenant = data.get("tenant")
        return cls(
            agent=str(data["agent"]),
            tenant=tenant if isinstance(tenant, str) else None,
            send_mode=_send_mode(data.get("send_mode")),
            created_at=datetime.fromisoformat(str(data["created_at"])),
        )


def _send_mode(value: JsonValue) -> Literal["steer", "queue"] | None:
    match value:
        case "steer" | "queue":
            return value
        case _:
            return None


class Sessions:
    """Served sessions by id; each open at most once in this process."""

    def __init__(self, manager: RunManager) -> None:
        self.manager = manager
        self.open: dict[str, ServedSession] = {}
        self._opening = asyncio.Lock()

    @property
    def _artifacts(self) -> ArtifactStore:
        return self.manager.stores.artifacts

    @property
    def _store(self) -> SessionStore:
        return self.manager.stores.sessions

    async def create(
        self,
        caller: Caller,
        agent_name: str | None,
        session_id: str | None,
        send_mode: Literal["steer", "queue"] | None,
    ) -> ServedSession:
        """Create a session of the caller's tenant and open it here.

        Raises:
            Unavailable: The server is draining.
            NotFound: No such agent.
            Conflict: ``session_id`` is taken.
        """
        if self.manager.draining:
            raise Unavailable("The server is shutting down; open the session on another one.")
        agent = self.manager.agent(agent_name)
        async with self._opening:
            chosen = session_id or new_id("session")
            if await self._owner(chosen) is not None or await self._exists(chosen):
                raise Conflict(f"Session {chosen!r} exists already.")
            owner = Owner(
                agent=agent.name, tenant=caller.tenant, send_mode=send_mode,
                created_at=datetime.now(UTC),
            )  # fmt: skip
            await self._artifacts.write(_owner_key(chosen), owner.dumps(), role=_ROLE, seq=1)
            await self._store.put_state(chosen, {})  # the store knows it from now on
            return await self._open(chosen, owner)

    async def get(self, session_id: str, caller: Caller) -> ServedSession:
        """The session, opened here if it is not yet, if the caller may see it.

        Raises:
            NotFound: No such served session, or another tenant's.
        """
        served = self.open.get(session_id)
        if served is not None and caller.sees(served.tenant):
            return served
        owner = await self._owner(session_id)
        if served is not None or owner is None or not caller.sees(owner.tenant):
            raise NotFound(f"No session {session_id}.")
        async with self._opening:
            served = self.open.get(session_id)
            return served if served is not None else await self._open(session_id, owner)

    async def list(self, caller: Caller, *, limit: int, offset: int) -> SessionList:
        """A page of the caller's sessions, newest first."""
        found: list[ServedSession] = []
        skipped, start = 0, 0
        while True:
            page = await self._store.list_sessions(limit=_SCAN, offset=start)
            start += len(page)
            for info in page:
                owner = await self._owner(info.session_id)
                if owner is None or not caller.sees(owner.tenant):
                    continue
                if skipped < offset:
                    skipped += 1
                    continue
                if len(found) == limit:
                    return _page(found, offset + limit)
                found.append(await self.get(info.session_id, caller))
            if len(page) < _SCAN:
                return _page(found, None)

    def events(self, served: ServedSession, after: int) -> AsyncIterator[LoggedEvent]:
        """The session's events after ``after`` until it settles."""
        return follow_session(served, after, log=self.manager.log, hub=self.manager.hub)

    async def close(self, grace: float) -> None:
        """Let the turns in flight end (at most ``grace`` s), abort the rest, write all events.

        Every open session's recorder is flushed before this returns, so no writer task
        outlives the server (and the store it writes to).
        """
        busy = [s.session for s in self.open.values() if s.session.running]
        if busy:
            waits = [asyncio.ensure_future(_settled(s)) for s in busy]
            _, late = await asyncio.wait(waits, timeout=grace)
            for session in busy:
                if session.running:
                    session.abort()
            await asyncio.gather(*late)
        await asyncio.gather(*(served.close() for served in self.open.values()))

    async def _exists(self, session_id: str) -> bool:
        store = self._store
        return (
            bool(await store.entries(session_id)) or await store.get_state(session_id) is not None
        )

    async def _owner(self, session_id: str) -> Owner | None:
        found = await self._artifacts.read(run_id=_owner_key(session_id), role=_ROLE)
        return Owner.loads(found[0].content) if found else None

    async def _open(self, session_id: str, owner: Owner) -> ServedSession:
        manager = self.manager
        key = session_key(session_id)
        logged = await manager.log.read(key, 0)
        runs = [str(json.loads(e.data)["run_id"]) for e in logged if e.type == "run"]
        agent = manager.agent(owner.agent)
        clock = agent.config.clock
        turns = TurnEvents(manager.log, manager.hub, clock)
        session = await Session.resume(
            agent,
            session_id,
            tenant_id=owner.tenant,
            event_bus=turns.bus,
            send_mode=owner.send_mode,
        )
        recorder = Recorder(key, manager.log, manager.hub, clock, close_hub=False)
        served = ServedSession(
            session, agent=owner.agent, tenant=owner.tenant, created_at=owner.created_at,
            recorder=recorder, last_seq=logged[-1].seq if logged else 0,
            last_type=logged[-1].type if logged else None, runs=runs,
        )  # fmt: skip
        if logged and logged[-1].type != "idle":  # its last turn was cut short elsewhere
            served.emit("idle", {"status": served.view().status})
        self.open[session_id] = served
        return served


async def _settled(session: Session) -> None:
    with contextlib.suppress(Exception):  # a failed turn is logged by its watcher
        await session.wait_for_idle()


def _page(found: list[ServedSession], next_offset: int | None) -> SessionList:
    return SessionList(sessions=[s.view() for s in found], next_offset=next_offset)
