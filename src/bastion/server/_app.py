"""``create_app``: the served agents behind a FastAPI application."""

from __future__ import annotations

import asyncio
import hmac
from collections.abc import AsyncGenerator, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from pydantic import BaseModel

from bastion.agent import Agent
from bastion.core import UserError
from bastion.graph import Graph
from bastion.stores import Stores, open_store

from ._auth import TokenAuth, Unauthorized
from ._console import agents_router, mount_console
from ._errors import NotFound, install_error_handlers
from ._graph_routes import graphs_router
from ._graphs import GraphRuns
from ._limits import BodyLimit
from ._manager import RunManager
from ._routes import router
from ._service import Service
from ._sessions import Sessions
from ._sessions_routes import sessions_router
from ._takeover import watch
from ._temporal_app import temporal_router, temporal_runs
from ._trace_routes import execution_trace_router, trace_router

if TYPE_CHECKING:
    from temporalio.client import Client

    from ._temporal import TemporalRuns

__all__ = ["create_app"]

Agents = Agent[Any, Any] | Mapping[str, Agent[Any, Any]]
Graphs = Graph | Mapping[str, Graph]


class _Health(BaseModel):
    """What ``/healthz`` and ``/admin/drain`` answer."""

    status: str
    runs_in_flight: int


def create_app(
    agents: Agents,
    *,
    store: Stores | str | None = None,
    auth: Mapping[str, str] | None = None,
    admin_token: str | None = None,
    cors_origins: Sequence[str] = (),
    max_body_bytes: int = 1_000_000,
    drain_timeout: float = 30.0,
    poll_interval: float = 0.25,
    takeover_interval: float | None = 5.0,
    lease_ttl: float | None = None,
    graphs: Graphs | None = None,
    temporal: str | Client | None = None,
) -> FastAPI:
    """An ASGI application serving ``agents`` over HTTP (run it with uvicorn).

    Args:
        agents: One agent, or agents by name (each key the agent's own name).
        store: Where runs are journaled and events logged: a :class:`Stores` (yours to
            close) or a URL (opened at startup, closed at shutdown). ``None``: as
            ``open_store()`` chooses (``BASTION_STORE``, else ``./.bastion/bastion.db``).
        auth: Bearer tokens, each mapped to its tenant; ``None`` serves without auth
            (every run visible to every caller).
        admin_token: The bearer token of ``POST /admin/drain``; ``None`` disables it.
        cors_origins: Origins allowed by CORS (``["*"]`` for any); empty: no CORS headers.
        max_body_bytes: Largest request body accepted (413 above it).
        drain_timeout: Seconds a shutdown waits for runs in flight before stopping them
            after their current step.
        poll_interval: Seconds between store reads when following a run (or a graph
            execution) another server process is running.
        takeover_interval: Seconds between scans of the store for runs a dead server
            process left ``running`` (their lease expired), which this process then resumes
            from their journal; ``None``: never take runs over.
        lease_ttl: Seconds a run's lease lives without a heartbeat (how long a dead
            process's runs wait to be taken over); ``None`` keeps the store's
            (``Stores.lease_ttl``, 30 by default). Set on ``store`` when it is a ``Stores``.
        graphs: One graph, or graphs by key (each key the graph's own): their executions
            are served under ``/graphs`` and ``/executions``, checkpointed into ``store``.
            ``agents`` may then be empty.
        temporal: A Temporal server's address (``host:port``, connected at startup) or a
            connected ``temporalio`` client: runs start as workflows of the agents
            (``bastion worker`` runs them), on the same routes; the workers publish their
            events into ``store``, so give them the same store. Needs ``bastion[temporal]``.

    Raises:
        UserError: No agents (nor graphs), a key that is not its agent's name or graph's
            key, an invalid graph, a bad store, a bad token, or a limit that is not positive.
    """
    served_graphs = _graphs(graphs)
    graphs_only = bool(served_graphs) and isinstance(agents, Mapping) and not agents
    served = {} if graphs_only else _served(agents)
    _check_limits(max_body_bytes, drain_timeout, poll_interval, takeover_interval, lease_ttl)
    _check_admin_token(admin_token)
    stores = store if isinstance(store, Stores) else open_store(store)
    if lease_ttl is not None:
        stores.lease_ttl = lease_ttl
    manager = RunManager(_on(served, stores), stores, drain_timeout=drain_timeout)
    service = Service(manager, TokenAuth(auth) if auth is not None else None, poll=poll_interval)
    sessions = Sessions(manager)
    graph_runs = GraphRuns(served_graphs, stores, poll=poll_interval)
    on_temporal = temporal_runs(served, stores, temporal, poll_interval, service.stopping)
    life = _Lifespan(
        stores=stores,
        owned=not isinstance(store, Stores),
        manager=manager,
        service=service,
        sessions=sessions,
        graph_runs=graph_runs,
        on_temporal=on_temporal,
        takeover_interval=takeover_interval,
        drain_timeout=drain_timeout,
    )
    app = FastAPI(title="Bastion", summary="Runs of Bastion agents over HTTP.", lifespan=life)
    install_error_handlers(app)
    life.attach(app)
    _routes(app, temporal=on_temporal is not None, graphs=bool(served_graphs))
    _admin_routes(app, service, admin_token)
    _middleware(app, max_body_bytes, cors_origins)
    return app


def _routes(app: FastAPI, *, temporal: bool, graphs: bool) -> None:
    if temporal:
        app.include_router(temporal_router())
    app.include_router(router)
    app.include_router(trace_router)
    app.include_router(sessions_router)
    app.include_router(agents_router)
    if graphs:
        app.include_router(graphs_router)
        app.include_router(execution_trace_router)
    mount_console(app)


def _on(served: Mapping[str, Agent[Any, Any]], stores: Stores) -> dict[str, Agent[Any, Any]]:
    """The served agents, each journaling to the server's store."""
    return {name: agent.with_store(stores) for name, agent in served.items()}


def _check_admin_token(admin_token: str | None) -> None:
    if admin_token is not None and not admin_token:
        raise UserError("admin_token must be non-empty (or None to disable /admin/drain).")


def _check_limits(
    max_body_bytes: int,
    drain_timeout: float,
    poll_interval: float,
    takeover_interval: float | None,
    lease_ttl: float | None,
) -> None:
    if max_body_bytes <= 0 or drain_timeout < 0 or poll_interval <= 0:
        raise UserError("max_body_bytes and poll_interval must be > 0, drain_timeout >= 0.")
    if takeover_interval is not None and not takeover_interval > 0:
        raise UserError(f"takeover_interval must be > 0 (or None), got {takeover_interval!r}.")
    if lease_ttl is not None and not lease_ttl > 0:
        raise UserError(f"lease_ttl must be > 0 (or None), got {lease_ttl!r}.")


def _middleware(app: FastAPI, max_body_bytes: int, cors_origins: Sequence[str]) -> None:
    app.add_middleware(BodyLimit, max_bytes=max_body_bytes)
    if cors_origins:
        app.add_middleware(
            CORSMiddleware,
            allow_origins=list(cors_origins),
            allow_methods=["*"],
            allow_headers=["*"],
            expose_headers=["*"],
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class _Lifespan:
    """What the application starts at startup and stops, in order, at shutdown."""

    stores: Stores
    owned: bool
    manager: RunManager
    service: Service
    sessions: Sessions
    graph_runs: GraphRuns
    on_temporal: TemporalRuns | None
    takeover_interval: float | None
    drain_timeout: float

    def attach(self, app: FastAPI) -> None:
        """Give the routes what they serve (``app.state``)."""
        app.state.bastion = self.service
        app.state.bastion_sessions = self.sessions
        app.state.bastion_graphs = self.graph_runs
        if self.on_temporal is not None:
            app.state.bastion_temporal = self.on_temporal

    @asynccontextmanager
    async def __call__(self, app: FastAPI) -> AsyncGenerator[None]:
        await self.stores.open()
        if self.on_temporal is not None:
            await self.on_temporal.connect()
        manager = self.manager
        interval = self.takeover_interval
        watcher = (
            None
            if interval is None
            else asyncio.create_task(watch(manager, interval, manager.refusing))
        )
        try:
            yield
        finally:
            await self.graph_runs.close()
            await self.sessions.close(self.drain_timeout)
            await manager.drain()  # sets manager.refusing: the watcher stops
            if watcher is not None:
                await watcher
            self.service.stopping.set()
            if self.owned:
                await self.stores.close()


def _served(agents: Agents) -> dict[str, Agent[Any, Any]]:
    if isinstance(agents, Agent):
        return {agents.name: agents}
    if not isinstance(agents, Mapping) or not agents:
        raise UserError("create_app needs an Agent or a non-empty dict of agents by name.")
    for name, agent in agents.items():
        if not isinstance(agent, Agent):
            raise UserError(f"agents[{name!r}] is {type(agent).__name__}, not an Agent.")
        _keyed_as_journaled("agents", name, agent.name, ("agent", "name", "runs"))
    return dict(agents)


def _graphs(graphs: Graphs | None) -> dict[str, Graph]:
    if graphs is None:
        return {}
    served = {graphs.key: graphs} if isinstance(graphs, Graph) else dict(graphs)
    for key, graph in served.items():
        if not isinstance(graph, Graph):
            raise UserError(f"graphs[{key!r}] is {type(graph).__name__}, not a Graph.")
        _keyed_as_journaled("graphs", key, graph.key, ("graph", "key", "executions"))
        graph.validate()
    return served


def _keyed_as_journaled(served: str, key: str, own: str, names: tuple[str, str, str]) -> None:
    """Refuse ``served[key]`` unless ``key`` is ``own``, the name the journal records it under.

    ``names``: what is served, what its own name is called, and what the journal records
    under it (``("agent", "name", "runs")``).
    """
    if key != own:
        thing, by, records = names
        raise UserError(
            f"{served}[{key!r}] is the {thing} {own!r}: key each {thing} by its {by} "
            f"(the journal records {records} under it)."
        )


def _admin_routes(app: FastAPI, service: Service, admin_token: str | None) -> None:
    @app.get("/healthz", tags=["server"])
    async def health() -> _Health:  # pyright: ignore[reportUnusedFunction]
        """Whether the server takes new runs, and how many it runs."""
        manager = service.manager
        state = "draining" if manager.draining else "ok"
        return _Health(status=state, runs_in_flight=len(manager.live))

    @app.post("/admin/drain", status_code=202, tags=["server"])
    async def drain(request: Request) -> _Health:  # pyright: ignore[reportUnusedFunction]
        """Refuse new runs and let the runs in flight end (idempotent)."""
        if admin_token is None:
            raise NotFound("Draining over HTTP is not enabled (create_app(admin_token=...)).")
        given = request.headers.get("authorization", "").removeprefix("Bearer ").strip()
        if not hmac.compare_digest(given.encode(), admin_token.encode()):
            raise Unauthorized("The drain needs the admin bearer token.")
        await service.manager.drain()
        return _Health(status="draining", runs_in_flight=len(service.manager.live))
