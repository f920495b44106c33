"""``bastion serve module:attr [--graph module:graph]``: agents and graphs over HTTP (uvicorn)."""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, Any, cast

import typer

from bastion.agent import Agent
from bastion.core import UserError

from ._common import EXIT_USAGE, error, or_exit
from ._graph_cli import load_graph
from ._load import SpecError, _call_factory, load_object
from ._temporal_client import TEMPORAL_OPTION

if TYPE_CHECKING:
    from bastion.graph import Graph

__all__ = ["TOKENS_ENV", "parse_tokens", "serve"]

TOKENS_ENV = "BASTION_SERVER_TOKENS"
"""Bearer tokens as ``TOKEN=TENANT`` pairs separated by commas (kept out of ``ps``)."""


_SPEC = typer.Argument(
    metavar="MODULE:ATTR",
    help="An agent, a dict of agents by name, or a function returning either "
    "(may be left out with --graph).",
    show_default=False,
)

_TOKEN = typer.Option(
    "--token",
    metavar="TOKEN=TENANT",
    help=f"A bearer token and its tenant (repeatable; also ${TOKENS_ENV}). "
    "None: no auth, every run visible to every caller.",
)

_TAKEOVER = typer.Option(
    "--takeover-interval",
    help="Seconds between scans for runs a dead server process left running "
    "(resumed here from their journal); 0: never take runs over.",
)

_LEASE_TTL = typer.Option(
    "--lease-ttl",
    help="Seconds a run's lease lives without a heartbeat: how long a dead "
    "process's runs wait before another takes them over (default: the store's, 30).",
)

_GRAPH = typer.Option(
    "--graph",
    metavar="MODULE:ATTR",
    help="A graph to serve too (repeatable): its executions under /graphs.",
)


def serve(  # noqa: PLR0917 (typer options)
    spec: Annotated[str | None, _SPEC] = None,
    store: Annotated[
        str | None,
        typer.Option("--store", metavar="URL", help="The store (default: $BASTION_STORE)."),
    ] = None,
    host: Annotated[str, typer.Option("--host", help="The address to listen on.")] = "127.0.0.1",
    port: Annotated[int, typer.Option("--port", help="The port to listen on.")] = 8000,
    token: Annotated[list[str] | None, _TOKEN] = None,
    cors: Annotated[
        list[str] | None,
        typer.Option("--cors", metavar="ORIGIN", help="An origin CORS allows (repeatable)."),
    ] = None,
    drain_timeout: Annotated[
        float, typer.Option("--drain-timeout", help="Seconds a shutdown waits for runs.")
    ] = 30.0,
    takeover_interval: Annotated[float, _TAKEOVER] = 5.0,
    lease_ttl: Annotated[float | None, _LEASE_TTL] = None,
    graph: Annotated[list[str] | None, _GRAPH] = None,
    temporal: Annotated[str | None, TEMPORAL_OPTION] = None,
) -> None:
    """Serve agents (and graphs) over HTTP: runs, resumable event streams (SSE), approvals."""
    try:
        from bastion.server import create_app
    except ImportError:
        error("bastion serve needs the server extra: pip install 'bastion[server]'.")
        raise typer.Exit(EXIT_USAGE) from None
    import uvicorn

    if spec is None and not graph:
        error("Name the agents to serve (MODULE:ATTR), or a graph with --graph.")
        raise typer.Exit(EXIT_USAGE)
    agents = {} if spec is None else or_exit(lambda: load_served(spec))
    graphs = or_exit(lambda: _graphs(graph or ()))
    try:
        pairs = [*(token or ()), *os.environ.get(TOKENS_ENV, "").split(",")]
        app = create_app(
            agents,
            graphs=graphs or None,
            store=store,
            auth=parse_tokens(pairs),
            cors_origins=tuple(cors or ()),
            drain_timeout=drain_timeout,
            takeover_interval=takeover_interval or None,
            lease_ttl=lease_ttl,
            temporal=temporal,
        )
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    uvicorn.run(app, host=host, port=port, timeout_graceful_shutdown=int(drain_timeout) + 5)


def _graphs(specs: Sequence[str]) -> dict[str, Graph]:

    loaded = [load_graph(spec) for spec in specs]
    return {graph.key: graph for graph in loaded}


def load_served(spec: str) -> Agent[Any, Any] | dict[str, Agent[Any, Any]]:
    """The agent or the agents by name that ``spec`` names (a factory is called).

    Raises:
        SpecError: The spec does not lead to an agent or a dict of agents.
    """
    value = load_object(spec)
    if not isinstance(value, (Agent, Mapping)):
        value = _call_factory(value, spec)
    if isinstance(value, Agent):
        return cast("Agent[Any, Any]", value)
    kind = type(cast("object", value)).__name__
    if isinstance(value, Mapping):
        served = cast("Mapping[object, object]", value)
        agents: dict[str, Agent[Any, Any]] = {}
        for name, agent in served.items():
            if isinstance(name, str) and isinstance(agent, Agent):
                agents[name] = cast("Agent[Any, Any]", agent)
        if agents and len(agents) == len(served):
            return agents
    raise SpecError(f"{spec!r} is {kind}: serve an Agent or a dict of agents by name.")


def parse_tokens(pairs: list[str]) -> dict[str, str] | None:
    """``TOKEN=TENANT`` pairs as a dict (``None`` when there are none).

    Raises:
        UserError: A pair without ``=``, or with an empty side.
    """
    tokens: dict[str, str] = {}
    for pair in (p.strip() for p in pairs):
        if not pair:
            continue
        secret, sep, tenant = pair.partition("=")
        if not sep or not secret.strip() or not tenant.strip():
            raise UserError("--token needs TOKEN=TENANT (the token itself is not shown).")
        tokens[secret.strip()] = tenant.strip()
    return tokens or None
