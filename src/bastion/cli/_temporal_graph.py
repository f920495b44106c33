"""``bastion worker`` for graphs, ``graph run --temporal``, ``graph answer``: graphs on Temporal.

A plain :class:`~bastion.graph.Graph` is wrapped in a
:class:`~bastion.distributed.TemporalGraph` (queue ``bastion.graph.<key>`` unless
``--task-queue``). Exit codes follow ``bastion graph run``: 0 completed, 1 not completed
(failed, or paused for an answer: the answer command is printed), 2 used wrongly.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Annotated

import typer
from rich.text import Text

from bastion.core import JsonValue, UserError
from bastion.graph import Graph

from ._common import EXIT_FAILED_RUN, EXIT_USAGE, Output, console, error, graph_input, or_exit
from ._load import SpecError, _call_factory, load_object
from ._temporal_client import TEMPORAL_OPTION, TaskQueue, connect, refusing, run_client

if TYPE_CHECKING:
    from temporalio.client import Client

    from bastion.distributed import GraphWorkflowResult, GraphWorkflowStatus, TemporalGraph

__all__ = [
    "graph_answer",
    "holds_graphs",
    "made_value",
    "run_graph_on_temporal",
    "serve_graphs",
    "temporal_graphs",
]


def _items(value: object) -> list[object]:
    if isinstance(value, Mapping):
        return list(value.values())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    if isinstance(value, list | tuple):
        return list(value)  # pyright: ignore[reportUnknownArgumentType]
    return [value]


def _is_graph(item: object) -> bool:
    if isinstance(item, Graph):
        return True
    distributed = sys.modules.get("bastion.distributed")  # a TemporalGraph loaded it
    return distributed is not None and isinstance(item, distributed.TemporalGraph)


def made_value(value: object, spec: str) -> object:
    """``value``, or what it makes when it is a factory of no arguments."""
    return value if _is_graph(value) else _call_factory(value, spec)


def holds_graphs(value: object) -> bool:
    """Whether ``value`` is a graph (or ``TemporalGraph``), or a list or dict of them."""
    items = _items(value)
    return bool(items) and all(_is_graph(i) for i in items)


def temporal_graphs(value: object, task_queue: str | None) -> list[TemporalGraph]:
    """The Temporal graphs a loaded value holds (a graph, a list or dict of them, ...)."""
    try:
        from bastion.distributed import TemporalGraph
    except ImportError as exc:  # the extra is not installed
        raise SpecError(
            f"--temporal needs the temporal extra: pip install 'bastion[temporal]' ({exc})."
        ) from None
    found: list[TemporalGraph] = []
    for item in _items(value):
        if isinstance(item, TemporalGraph):
            if task_queue is not None and item.task_queue != task_queue:
                raise SpecError(
                    f"A TemporalGraph on queue {item.task_queue!r} was given; set its "
                    "task_queue instead of --task-queue."
                )
            found.append(item)
        else:
            assert isinstance(item, Graph)
            try:
                found.append(TemporalGraph(item, task_queue=task_queue))
            except UserError as exc:
                raise SpecError(str(exc)) from None
    return found


def serve_graphs(value: object, address: str, task_queue: str | None) -> None:
    """Serve the graphs ``value`` holds until SIGINT or SIGTERM (``bastion worker``)."""
    graphs = or_exit(lambda: temporal_graphs(value, task_queue))
    try:
        asyncio.run(_serve(graphs, address))
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


async def _serve(graphs: list[TemporalGraph], address: str) -> None:
    client = await connect(address)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        for graph in graphs:
            await stack.enter_async_context(graph.worker(client))
            print(
                f"Serving graph {graph.graph.key} on queue {graph.task_queue!r} at {address}.",
                flush=True,
            )
        await stop.wait()
        print("Stopping: finishing the nodes in flight.", flush=True)
    print("Stopped.", flush=True)


def _one_graph(spec: str, task_queue: str | None) -> TemporalGraph:
    def load() -> list[TemporalGraph]:
        made = made_value(load_object(spec), spec)
        if not holds_graphs(made):
            raise SpecError(f"{spec!r} is {type(made).__name__}, not a bastion Graph.")
        return temporal_graphs(made, task_queue)

    graphs = or_exit(load)
    if len(graphs) != 1:
        error(f"{spec!r} holds {len(graphs)} graphs; name one.")
        raise typer.Exit(EXIT_USAGE)
    return graphs[0]


def run_graph_on_temporal(  # noqa: PLR0917 (the options of graph run)
    spec: str,
    value: JsonValue,
    address: str,
    task_queue: str | None,
    workflow_id: str | None,
    output: Output,
) -> int:
    """Start the graph ``spec`` names as a workflow, print how it ends; the exit code."""
    graph = _one_graph(spec, task_queue)

    async def go(client: Client) -> str:
        handle = await graph.start(client, value, workflow_id=workflow_id)
        return handle.id

    return _outcome(graph, spec, address, output, go)


def graph_answer(  # noqa: PLR0917 (typer arguments and options)
    workflow_id: Annotated[
        str, typer.Argument(metavar="WORKFLOW_ID", help="The graph's workflow.")
    ],
    node_id: Annotated[
        str, typer.Argument(metavar="NODE", help="The paused node, KEY@ROUND (e.g. review@0).")
    ],
    value: Annotated[
        str | None,
        typer.Argument(metavar="JSON|TEXT", help="What its ctx.pause returns (default null)."),
    ] = None,
    spec: Annotated[
        str,
        typer.Option("--graph", metavar="MODULE:ATTR", help="The graph.", show_default=False),
    ] = "",
    address: Annotated[str | None, TEMPORAL_OPTION] = None,
    task_queue: TaskQueue = None,
    json_lines: Annotated[bool, typer.Option("--json", help="The outcome as JSON.")] = False,
) -> None:
    """Answer a graph node paused on Temporal, then watch the graph to its next stop."""
    if not spec or address is None:
        error("graph answer needs --graph MODULE:ATTR and --temporal ADDRESS.")
        raise typer.Exit(EXIT_USAGE)
    graph = _one_graph(spec, task_queue)
    answer = graph_input(value)

    async def go(client: Client) -> str:
        await graph.answer(client, workflow_id, node_id, answer)
        return workflow_id

    raise typer.Exit(_outcome(graph, spec, address, "json" if json_lines else "auto", go))


def _outcome(
    graph: TemporalGraph,
    spec: str,
    address: str,
    output: Output,
    work: Callable[[Client], Awaitable[str]],
) -> int:
    """Run ``work`` (it returns the workflow id), wait for a pause or the end; print it."""

    async def go() -> tuple[str, GraphWorkflowStatus, GraphWorkflowResult | None]:
        client = await connect(address)
        workflow_id: str = await refusing(work(client))
        status = await refusing(graph.settle(client, workflow_id))
        if status.status == "paused":
            return workflow_id, status, None
        return workflow_id, status, await refusing(graph.result(client, workflow_id))

    outcome = run_client(go)
    if isinstance(outcome, int):
        return outcome
    workflow_id, status, result = outcome
    if output == "json":
        _write_json(workflow_id, status, result)
        return 0 if result is not None and result.ok else EXIT_FAILED_RUN
    if result is not None:
        _print_result(result, output)
        return 0 if result.ok else EXIT_FAILED_RUN
    out = console(plain=output == "plain")
    for line in _pending_lines(status, workflow_id, spec, address):
        out.print(Text(line), soft_wrap=True)
    return EXIT_FAILED_RUN


def _print_result(result: GraphWorkflowResult, output: Output) -> None:
    out = console(plain=output == "plain")
    for key, message in result.errors.items():
        error(f"node {key}: {message}")
    if result.ok:
        value = result.output
        out.print(Text(value if isinstance(value, str) else json.dumps(value)), soft_wrap=True)
    out.print(
        Text(f"{result.workflow_id} · {result.status} · {result.rounds} rounds", style="dim"),
        soft_wrap=True,
    )


def _write_json(
    workflow_id: str, status: GraphWorkflowStatus, result: GraphWorkflowResult | None
) -> None:
    from pydantic import TypeAdapter

    if result is None:
        body: dict[str, JsonValue] = json.loads(TypeAdapter(type(status)).dump_json(status))
        body = {"type": "graph_paused", "workflow_id": workflow_id, **body}
    else:
        body = {"type": "graph_end", **json.loads(TypeAdapter(type(result)).dump_json(result))}
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def _pending_lines(
    status: GraphWorkflowStatus, workflow_id: str, spec: str, address: str
) -> list[str]:
    lines = [f"Graph {workflow_id} is waiting for an answer on:"]
    lines.extend(
        f"  {asked.node_id}  {asked.reason}  {json.dumps(asked.payload)}"
        for asked in status.pending
    )
    asked = status.pending[0]
    parts = ["bastion", "graph", "answer", workflow_id, asked.node_id, "VALUE"]
    parts += ["--graph", spec, "--temporal", address]
    lines += ["Answer it with:", f"  {shlex.join(parts)}"]
    return lines
