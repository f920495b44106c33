"""``bastion graph run|resume``: run a durable graph, or continue one, watching its signals.

The graph is loaded like an agent (``module:attr`` or ``file.py:attr``, or a factory of no
arguments). Executions are checkpointed into the graph's own ``StoreCheckpointer`` unless
``--store`` names another store (else ``$BASTION_STORE``, else the default SQLite file).
Exit codes: 0 completed, 1 failed or suspended (the resume command is printed), 2 a usage
error printed as one ``error:`` line, 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import shlex
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.text import Text

from bastion.core import BastionError, UserError, dump_event
from bastion.graph import Graph, GraphResult, GraphSignal, GraphStream, StoreCheckpointer

from ._common import (
    EXIT_FAILED_RUN,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    console,
    default_store_url,
    error,
    graph_input,
    or_exit,
    value_option,
)
from ._graph_decisions import graph_directive
from ._graph_format import pending_line
from ._graph_render import GraphRenderer
from ._load import SpecError, load_object
from ._progress import GraphProgress
from ._temporal_client import TEMPORAL_OPTION, TaskQueue
from ._temporal_graph import run_graph_on_temporal

__all__ = ["graph_resume", "graph_run", "load_graph", "resume_graph_command"]

_STORE = value_option(
    "--store",
    "URL",
    "Checkpoint into this store (default: the graph's own, else $BASTION_STORE, "
    "else sqlite:///.bastion/bastion.db).",
)
_SPEC = value_option(
    "--graph", "MODULE:ATTR", "The graph: 'pkg.module:graph' or 'path/to/file.py:graph'."
)


def load_graph(spec: str) -> Graph:
    """The :class:`Graph` that ``spec`` names (or that a factory it names returns).

    Raises:
        SpecError: The spec cannot be resolved or is not a graph.
    """
    value = load_object(spec)
    if isinstance(value, Graph):
        return value
    if callable(value) and not isinstance(value, type):
        made = cast("Callable[[], object]", value)()
        if isinstance(made, Graph):
            return made
    raise SpecError(f"{spec!r} is {type(value).__name__}, not a bastion Graph.")


def _checkpointer(graph: Graph, store: str | None) -> StoreCheckpointer:
    if store is None and isinstance(graph.checkpointer, StoreCheckpointer):
        return graph.checkpointer
    return StoreCheckpointer(store or default_store_url())


def _print_json(signal: GraphSignal) -> None:
    typer.echo(dump_event(cast("Any", signal)).decode())


async def _watch(
    checkpointer: StoreCheckpointer,
    open_stream: Callable[[], Awaitable[GraphStream | GraphResult]],
    on_signal: Callable[[GraphSignal], None],
) -> GraphResult:
    try:
        opened = await open_stream()
        if isinstance(opened, GraphResult):
            return opened
        async for signal in opened:
            on_signal(signal)
        assert opened.result is not None
        return opened.result
    finally:
        await checkpointer.aclose()


def _finish(
    output: str,
    checkpointer: StoreCheckpointer,
    result: GraphResult,
    spec: str,
    store: str | None,
) -> int:
    out = Console(stderr=True, highlight=False) if output == "json" else console(plain=True)
    if result.status == "completed":
        if output != "json":
            out.print(f"output: {json.dumps(result.output, ensure_ascii=False, default=str)}")
        return 0
    if result.status == "suspended":
        record = asyncio.run(_record(checkpointer, result.execution_id))
        out.print(Text(f"Execution {result.execution_id} is waiting for:", style="bold"))
        for item in record:
            out.print(Text(f"  {pending_line(item)}"), soft_wrap=True)
        command = resume_graph_command(result.execution_id, spec, store, record)
        out.print("Resume it with, e.g.:")
        out.print(Text(f"  {command}", style="bold cyan"), soft_wrap=True)
    return EXIT_FAILED_RUN


async def _record(checkpointer: StoreCheckpointer, execution_id: str) -> list[dict[str, object]]:
    try:
        return [
            dict[str, object](item) for item in (await checkpointer.record(execution_id)).pending
        ]
    finally:
        await checkpointer.aclose()


def resume_graph_command(
    execution_id: str, spec: str, store: str | None, pending: Sequence[Mapping[str, object]]
) -> str:
    """The ``bastion graph resume`` line that approves everything the execution waits for."""
    parts = ["bastion", "graph", "resume", execution_id, "--graph", spec]
    if store is not None:
        parts += ["--store", store]
    for item in pending:
        parts += ["--approve", str(item.get("id", ""))]
    return shlex.join(parts)


def _stream(
    output: str,
    graph: Graph,
    checkpointer: StoreCheckpointer,
    open_stream: Callable[[], Awaitable[GraphStream | GraphResult]],
) -> GraphResult | int:
    out = console(plain=output != "auto")
    progress = GraphProgress(graph, out)  # bars on a terminal only
    lines = GraphRenderer(out).handle

    def on_signal(signal: GraphSignal) -> None:
        if output == "json":
            _print_json(signal)
            return
        lines(signal)
        progress.handle(signal)

    try:
        with progress:
            return asyncio.run(_watch(checkpointer, open_stream, on_signal))
    except BastionError as exc:  # misuse, an unreachable store, a version conflict
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED


def graph_run(  # noqa: PLR0917 (typer options)
    spec: Annotated[
        str, typer.Argument(metavar="MODULE:ATTR", help="The graph.", show_default=False)
    ],
    input_text: Annotated[
        str | None,
        typer.Option("--input", metavar="JSON|TEXT", help="The input (JSON, else text)."),
    ] = None,
    execution_id: Annotated[
        str | None,
        typer.Option("--execution", metavar="ID", help="Name the execution (default: new)."),
    ] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON line per signal.")] = False,
    plain: Annotated[bool, typer.Option("--plain", help="Plain text, no colors.")] = False,
    store: Annotated[str | None, _STORE] = None,
    temporal: Annotated[str | None, TEMPORAL_OPTION] = None,
    task_queue: TaskQueue = None,
) -> None:
    """Run a graph on an input, checkpointed, and watch its nodes live."""
    output = "json" if json_lines else "plain" if plain else "auto"
    if temporal is not None:  # a workflow: the server's history is its checkpoint
        value = graph_input(input_text)
        raise typer.Exit(
            run_graph_on_temporal(spec, value, temporal, task_queue, execution_id, output)
        )
    if task_queue is not None:
        error("--task-queue needs --temporal ADDRESS.")
        raise typer.Exit(EXIT_USAGE)
    graph = or_exit(lambda: load_graph(spec))
    try:
        checkpointer = _checkpointer(graph, store)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    value = graph_input(input_text)

    async def open_stream() -> GraphStream:
        return graph.stream(value, execution_id=execution_id, checkpointer=checkpointer)

    outcome = _stream(output, graph, checkpointer, open_stream)
    if isinstance(outcome, int):
        raise typer.Exit(outcome)
    raise typer.Exit(_finish(output, checkpointer, outcome, spec, store))


def graph_resume(  # noqa: PLR0917 (typer options)
    execution_id: Annotated[
        str, typer.Argument(metavar="EXECUTION_ID", help="The execution (gx_…).")
    ],
    spec: Annotated[str, _SPEC],
    approve: Annotated[
        list[str] | None,
        typer.Option("--approve", metavar="ID", help="Approve this call or interrupt."),
    ] = None,
    deny: Annotated[
        list[str] | None,
        typer.Option("--deny", metavar="ID[:REASON]", help="Deny this call or interrupt."),
    ] = None,
    values: Annotated[
        list[str] | None,
        typer.Option(
            "--value", metavar="ID=JSON", help="Answer a paused node: ctx.pause returns JSON."
        ),
    ] = None,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON line per signal.")] = False,
    plain: Annotated[bool, typer.Option("--plain", help="Plain text, no colors.")] = False,
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """Resume a graph execution (suspended, or cut short by a crash) to its end."""
    graph = or_exit(lambda: load_graph(spec))
    output = "json" if json_lines else "plain" if plain else "auto"
    try:
        checkpointer = _checkpointer(graph, store)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None

    async def open_stream() -> GraphStream | GraphResult:
        pending = (await checkpointer.record(execution_id)).pending
        directive = graph_directive(pending, approve or [], deny or [], values or [])
        return await graph.resume_stream(execution_id, directive, checkpointer=checkpointer)

    outcome = _stream(output, graph, checkpointer, open_stream)
    if isinstance(outcome, int):
        raise typer.Exit(outcome)
    raise typer.Exit(_finish(output, checkpointer, outcome, spec, store))
