"""``bastion graph show|history|fork``: graph executions in a store, without the graph.

These read (and for ``fork`` append to) the journal only, so they need no graph module.
The store is chosen as for ``bastion runs``. Exit codes: 0 done, 2 a usage error (unknown
execution or checkpoint, a bad edit, an unreachable store), printed as one ``error:`` line.
"""

from __future__ import annotations

import json
from typing import Annotated

import typer
from rich.table import Table
from rich.text import Text

from bastion.core import JsonValue, UserError
from bastion.graph import fork_execution, load_execution

from ._common import EXIT_USAGE, console, error
from ._format import preview
from ._graph_format import pending_line
from ._runs import _with_store

__all__ = ["fork", "history", "show"]

STORE = typer.Option(
    "--store",
    metavar="URL",
    help="The store: sqlite:///path.db, postgresql://…, redis://… "
    "(default: $BASTION_STORE, else sqlite:///.bastion/bastion.db).",
    show_default=False,
)
EXECUTION = typer.Argument(
    metavar="EXECUTION_ID", help="The execution's id (gx_…).", show_default=False
)
PLAIN = typer.Option("--plain", help="Plain text, without colors or animation.")


def _json(value: object, width: int = 60) -> str:
    return preview(json.dumps(value, ensure_ascii=False, default=str), width)


def show(
    execution_id: Annotated[str, EXECUTION],
    plain: Annotated[bool, PLAIN] = False,
    store: Annotated[str | None, STORE] = None,
) -> None:
    """Show a graph execution: status, finished nodes, what it waits for, its output."""
    record = _with_store(store, lambda stores: load_execution(stores, execution_id))
    out = console(plain=plain)
    out.print(Text(f"{record.execution_id} · graph {record.graph} · {record.status}", style="bold"))
    out.print(f"checkpoint version {record.version} · {len(record.checkpoints)} steps")
    if record.forked_from is not None:
        origin, version = record.forked_from
        out.print(f"forked from {origin} at version {version}")
    out.print(f"input: {_json(record.input)}")
    out.print("Finished nodes:" if record.finished else "No node has finished yet.")
    for node in record.finished.values():
        out.print(Text(f"  {node.key:<24} step {node.step:<3} → {_json(node.output)}"))
    if record.pending:
        out.print("Waiting for:")
        for item in record.pending:
            out.print(Text(f"  {pending_line(item)}"), soft_wrap=True)
    if record.status == "completed":
        out.print(f"output: {_json(record.output, 200)}")
    elif record.error:
        out.print(f"error: {record.error}")


def history(
    execution_id: Annotated[str, EXECUTION],
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON object a step.")] = False,
    plain: Annotated[bool, PLAIN] = False,
    store: Annotated[str | None, STORE] = None,
) -> None:
    """List an execution's checkpoints (one per super-step), oldest first."""
    record = _with_store(store, lambda stores: load_execution(stores, execution_id))
    if json_lines:
        for step in record.checkpoints:
            typer.echo(
                json.dumps(
                    {
                        "execution_id": step.execution_id,
                        "version": step.version,
                        "kind": step.kind,
                        "round": step.step,
                        "finished": list(step.finished),
                        "frontier": list(step.frontier),
                    }
                )
            )
        return
    out = console(plain=plain)
    if not record.checkpoints:
        out.print(f"Execution {execution_id} has no checkpoint yet.")
        return
    table = Table(box=None, show_edge=False, pad_edge=False)
    for column in ("version", "round", "checkpoint", "finished"):
        table.add_column(column, no_wrap=True)
    for step in record.checkpoints:
        if step.kind == "node":
            what = f"{step.finished[0]} → {_json(record.finished[step.finished[0]].output, 40)}"
            table.add_row(str(step.version), str(step.step), "node", what)
        else:
            following = ", ".join(step.frontier)
            what = f"{len(step.finished)} results" + (f"; next: {following}" if following else "")
            table.add_row(str(step.version), str(step.step), "round", what)
    out.print(table)


def _edits(values: list[str]) -> dict[str, JsonValue]:
    edits: dict[str, JsonValue] = {}
    for item in values:
        name, sep, raw = item.partition("=")
        if not sep or not name:
            raise UserError(f"Invalid --set {item!r}: use NODE=JSON, e.g. --set draft='\"v2\"'.")
        try:
            edits[name] = json.loads(raw)
        except ValueError:
            edits[name] = raw  # plain text is a string output
    return edits


def fork(
    execution_id: Annotated[str, EXECUTION],
    at: Annotated[
        int | None,
        typer.Option(
            "--at",
            metavar="VERSION",
            help="The checkpoint to fork from (see 'graph history'); default: the latest.",
            show_default=False,
        ),
    ] = None,
    set_values: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            metavar="NODE=JSON",
            help="Replace a finished node's output in the fork (JSON, or plain text).",
            show_default=False,
        ),
    ] = None,
    store: Annotated[str | None, STORE] = None,
) -> None:
    """Start a new execution from a checkpoint, optionally with edited node outputs.

    Nothing runs yet: resume the new execution ('bastion graph resume NEW_ID --graph
    MODULE:ATTR') to run what is left from that checkpoint.
    """
    try:
        edits = _edits(set_values or [])
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    new_id = _with_store(
        store, lambda stores: fork_execution(stores, execution_id, version=at, edits=edits)
    )
    typer.echo(new_id)
