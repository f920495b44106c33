"""``bastion runs list|show|why|resume|cancel|replay|export|prune``: the journaled runs of a store.

The store is ``--store URL``, else ``BASTION_STORE``, else the SQLite file
``./.bastion/bastion.db`` (as :func:`bastion.stores.open_store` chooses). Exit codes follow
``bastion run``: 0 done (a resumed run completed), 1 a resumed run did not complete, 2 the
command was used wrongly (unknown run, bad store URL, bad decision), 130 interrupted.
"""

from __future__ import annotations

import asyncio
import json
import sys
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Annotated, Any, TypeVar, cast

import typer
from rich.console import Console
from rich.table import Table
from rich.text import Text

from bastion.agent import RunResult, causal_chain, run_state_to_json
from bastion.core import BastionError, UserError
from bastion.graph import Graph
from bastion.stores import JournalEntry, RunRecord, Stores, open_store
from bastion.testing import ReplayModel

from ._common import (
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    Output,
    command_group,
    console,
    default_store_url,
    error,
    or_exit,
    stream_run,
    value_option,
)
from ._decisions import (
    Pending,
    build_directive,
    open_calls,
    pending_of_entries,
    pending_of_state,
    print_pending,
    resume_command,
)
from ._format import format_call, preview
from ._graph_cli import graph_resume
from ._graph_format import graph_entry_summary
from ._json import JsonValue, as_list, as_object, as_objects
from ._load import load_agent, load_object
from ._temporal import cancel_on_temporal, resume_on_temporal
from ._temporal_client import TEMPORAL_OPTION, TaskQueue

__all__ = ["entry_summary", "explain_suspension", "runs_app"]

_T = TypeVar("_T")

runs_app = command_group(
    "runs",
    "Journaled runs in the store: list, show, resume, replay, export and prune them; "
    "cancel a run on Temporal.",
)

_STORE = value_option(
    "--store",
    "URL",
    "The store: sqlite:///path.db, postgresql://…, redis://…, memory:// "
    "(default: $BASTION_STORE, else sqlite:///.bastion/bastion.db).",
)
_RUN_ID = typer.Argument(metavar="RUN_ID", help="The run's id (run_…).", show_default=False)
_PLAIN = typer.Option("--plain", help="Plain text, without colors or animation.")


@runs_app.command("list")
def list_runs(  # noqa: PLR0917 (typer options)
    status: Annotated[
        str | None,
        typer.Option(
            "--status",
            help="Only runs with this status (e.g. awaiting_approval).",
            show_default=False,
        ),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent's runs.", show_default=False)
    ] = None,
    limit: Annotated[int, typer.Option("--limit", min=1, help="Runs per page.")] = 20,
    offset: Annotated[int, typer.Option("--offset", min=0, help="Runs to skip.")] = 0,
    json_lines: Annotated[bool, typer.Option("--json", help="One JSON object per run.")] = False,
    plain: Annotated[bool, _PLAIN] = False,
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """List the runs in the store, newest first."""
    page = _with_store(
        store,
        lambda stores: stores.journal.list_runs(
            status=cast("Any", status), agent=agent, limit=limit, offset=offset
        ),
    )
    if json_lines:
        for record in page.runs:
            _write_json(_record_json(record))
        return
    out = console(plain=plain)
    if not page.runs:
        out.print("No runs.")
        return
    if not out.is_terminal:
        out.width = max(out.width, 120)  # a pipe: keep each run on one line
    table = Table(box=None, show_edge=False, pad_edge=False)
    for column in ("run", "kind", "agent", "status", "entries", "updated"):
        table.add_column(column, no_wrap=True)
    for record in page.runs:
        table.add_row(
            record.run_id,
            run_kind(record),
            record.agent.removeprefix("graph:"),
            record.status,
            str(record.last_seq),
            record.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
        )
    out.print(table)
    if page.next_offset is not None:
        out.print(f"More: --offset {page.next_offset}")


@runs_app.command()
def show(
    run_id: Annotated[str, _RUN_ID],
    plain: Annotated[bool, _PLAIN] = False,
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """Show a run: its status, pending approvals, and its journal entries."""
    record, entries = _with_store(store, lambda stores: _load(stores, run_id))
    out = console(plain=plain)
    out.print(Text(f"{record.run_id} · {record.agent} · {record.status}", style="bold"))
    out.print(
        f"created {record.created_at:%Y-%m-%d %H:%M:%S} · updated "
        f"{record.updated_at:%Y-%m-%d %H:%M:%S} · {record.last_seq} entries"
    )
    if record.status == "awaiting_approval":
        classifications = approval_classes(entries)
        pending = pending_of_entries(entries)
        if pending:
            out.print("Waiting for a decision on:")
            for item in pending:
                print_pending(out, [item], None)
                if classifications.get(item.id):
                    out.print(Text(f"    classification: {classifications[item.id]}"))
            command = resume_command(record.run_id, "MODULE:ATTR", store, pending)
            out.print("Resume it with one decision per item, e.g.:")
            out.print(Text(f"  {command}", style="bold cyan"), soft_wrap=True)
    if record.status == "running":
        started = open_calls(entries)
        if started:
            out.print(
                "Started with no recorded result (the run is live elsewhere, or its process died):"
            )
            for line in started:
                out.print(Text(f"  {line}"), soft_wrap=True)
    out.print("Journal:")
    for entry in entries:
        out.print(Text(f"  {entry.seq:>3} {entry.kind:<18} {entry_summary(entry)}"))


@runs_app.command()
def why(
    run_id: Annotated[str, _RUN_ID],
    call_id: Annotated[
        str, typer.Argument(metavar="CALL_ID", help="The tool call's id.", show_default=False)
    ],
    plain: Annotated[bool, _PLAIN] = False,
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """Why a run made a tool call: what its agent, and every agent above it, had read."""
    chain = _with_store(store, lambda stores: causal_chain(stores, run_id, call_id))
    out = console(plain=plain)
    for link in chain.links:
        mark = "untrusted " if link.untrusted else ""
        what = link.kind if link.tool_name is None else f"{link.kind} {link.tool_name}"
        where = f" ({link.source})" if link.source else ""
        out.print(
            Text(f"{link.agent} · step {link.step} · {mark}{what}{where}: {preview(link.text)}"),
            soft_wrap=True,
        )
    if chain.untrusted:
        out.print(Text(f"{len(chain.untrusted)} untrusted link(s) in the chain.", style="bold"))


@runs_app.command()
def cancel(  # noqa: PLR0917 (typer options)
    run_id: Annotated[str, typer.Argument(metavar="WORKFLOW_ID", show_default=False)],
    agent_spec: Annotated[
        str,
        typer.Option(
            "--agent",
            metavar="MODULE:ATTR",
            help="The run's agent, as for 'bastion run'.",
            show_default=False,
        ),
    ],
    temporal: Annotated[str | None, TEMPORAL_OPTION] = None,
    task_queue: TaskQueue = None,
    json_lines: Annotated[bool, typer.Option("--json", help="Print the end as JSON.")] = False,
    plain: Annotated[bool, _PLAIN] = False,
) -> None:
    """Cancel a run on Temporal: it ends aborted; what it waits for is denied.

    A local run is stopped by the process that runs it (Ctrl-C, or the server's
    POST /runs/{id}/cancel).
    """
    if temporal is None:
        error(
            "runs cancel stops a run on Temporal: give --temporal ADDRESS (or set "
            "$BASTION_TEMPORAL). A local run is stopped by the process that runs it."
        )
        raise typer.Exit(EXIT_USAGE)
    output = "json" if json_lines else "plain" if plain else "auto"
    raise typer.Exit(cancel_on_temporal(run_id, agent_spec, temporal, task_queue, output))


@runs_app.command()
def export(
    run_id: Annotated[str, _RUN_ID],
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """Print a run's journal as JSON lines (one entry a line) to stdout."""
    _, entries = _with_store(store, lambda stores: _load(stores, run_id))
    for entry in entries:
        _write_json(
            {
                "run_id": run_id,
                "seq": entry.seq,
                "kind": entry.kind,
                "schema_version": entry.schema_version,
                "recorded_at": entry.recorded_at.isoformat(),
                "payload": entry.payload,
            }
        )


_AGENT = value_option(
    "--agent",
    "MODULE:ATTR",
    "The run's agent, as for 'bastion run': 'pkg.module:agent' or "
    "'path/to/file.py:agent' (for a graph execution: the graph).",
)
_APPROVE = value_option("--approve", "CALL_ID", "Grant this pending call.")
_DENY = value_option(
    "--deny",
    "ID[:REASON]",
    "Deny this pending call or budget interrupt; the model reads the reason.",
)
_HAPPENED = value_option(
    "--happened",
    "CALL_ID[:RESULT]",
    "The call's outcome was unknown but it did happen: record RESULT as its "
    "result without running it again.",
)
_RAISE = value_option(
    "--raise", "INTERRUPT_ID=MAX", "Raise the limit of this budget interrupt to MAX, and retry."
)
_ANSWER = value_option(
    "--answer",
    "CALL_ID=JSON|decline|cancel",
    "Answer the question this call asked (an MCP server's elicitation); "
    "it runs again with the answer.",
)


@runs_app.command()
def resume(  # noqa: PLR0917 (typer options)
    run_id: Annotated[str, _RUN_ID],
    agent_spec: Annotated[str, _AGENT],
    approve: Annotated[list[str] | None, _APPROVE] = None,
    deny: Annotated[list[str] | None, _DENY] = None,
    happened: Annotated[list[str] | None, _HAPPENED] = None,
    raise_to: Annotated[list[str] | None, _RAISE] = None,
    answer: Annotated[list[str] | None, _ANSWER] = None,
    json_lines: Annotated[
        bool, typer.Option("--json", help="Print every event as one JSON line.")
    ] = False,
    plain: Annotated[bool, _PLAIN] = False,
    store: Annotated[str | None, _STORE] = None,
    temporal: Annotated[str | None, TEMPORAL_OPTION] = None,
    task_queue: TaskQueue = None,
) -> None:
    """Resume a journaled run (suspended for a decision, or cut short by a crash) to its end.

    A run waits on tool calls (approval, or an outcome unknown after a crash) and on budget
    interrupts; 'bastion runs show RUN_ID' lists them with the options that decide each.
    With --temporal, RUN_ID is a workflow's id and the decisions go to it as an update.
    """
    output = "json" if json_lines else "plain" if plain else "auto"
    if temporal is not None:
        if answer or store:
            error(
                "With --temporal, decide with --approve, --deny, --happened or --raise "
                "(--answer answers an MCP server's question: such agents do not run on Temporal)."
            )
            raise typer.Exit(EXIT_USAGE)
        options = (approve or [], deny or [], happened or [], raise_to or [])
        code = resume_on_temporal(run_id, agent_spec, temporal, task_queue, options, output)
        raise typer.Exit(code)
    if _is_graph(agent_spec):  # a graph execution: the graph resumes it
        if happened or raise_to or answer:
            error("A graph execution takes --approve, --deny (and 'graph resume --value').")
            raise typer.Exit(EXIT_USAGE)

        graph_resume(run_id, agent_spec, approve, deny, None, json_lines, plain, store)
    decisions = _Decisions(approve or [], deny or [], happened or [], raise_to or [], answer or [])
    raise typer.Exit(_resume_here(run_id, agent_spec, decisions, store, output))


@dataclass(frozen=True, slots=True)
class _Decisions:
    """The decisions given to ``bastion runs resume``, as typed."""

    approve: list[str]
    deny: list[str]
    happened: list[str]
    raise_to: list[str]
    answer: list[str]


def _resume_here(
    run_id: str, agent_spec: str, decisions: _Decisions, store: str | None, output: Output
) -> int:
    """Resume the run in this process, on its agent's store (or ``store``); the exit code."""
    agent = or_exit(lambda: load_agent(agent_spec))
    try:
        if store is not None or agent.config.store is None:
            agent = agent.with_store(store or default_store_url())
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    assert agent.config.store is not None
    url = agent.config.store.url
    interrupts: dict[str, Mapping[str, object]] = {}
    if decisions.deny or decisions.raise_to:  # which ids are budget interrupts, and their limits
        pending = _with_store(store or url, lambda stores: _pending(stores, run_id))
        interrupts = {p.id: p.interrupt for p in pending if p.interrupt is not None}
    try:
        directive = build_directive(
            decisions.approve,
            decisions.deny,
            decisions.happened,
            decisions.raise_to,
            interrupts,
            answers=decisions.answer,
        )
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    code, result = stream_run(
        agent, lambda: agent.resume_stream(run_id, directive=directive), output
    )
    if result is not None and result.status == "awaiting_approval":
        explain_suspension(result, agent_spec, store, output)
    return code


@runs_app.command()
def replay(  # noqa: PLR0917 (typer options)
    run_id: Annotated[str, _RUN_ID],
    agent_spec: Annotated[
        str,
        typer.Option(
            "--agent",
            metavar="MODULE:ATTR",
            help="The run's agent, as for 'bastion run': 'pkg.module:agent' or "
            "'path/to/file.py:agent'.",
            show_default=False,
        ),
    ],
    recorded_results: Annotated[
        bool,
        typer.Option(
            "--recorded-results",
            help="Do not run the tools: give each call its recorded result.",
        ),
    ] = False,
    json_lines: Annotated[
        bool, typer.Option("--json", help="Print every event as one JSON line.")
    ] = False,
    plain: Annotated[bool, _PLAIN] = False,
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """Run a recorded run again from its recorded model answers, without calling a model.

    The run must have been recorded (``ModelOptions(record_responses=True)``). The replay is a
    new run, kept in memory only; it fails, naming the step, where the agent now asks
    something the recording does not hold (exit code 1).
    """
    agent = or_exit(lambda: load_agent(agent_spec))
    recording = _with_store(store, lambda stores: ReplayModel.from_run(stores, run_id))
    output = "json" if json_lines else "plain" if plain else "auto"
    scratch = agent.with_store("memory://") if agent.config.store is not None else agent
    code, _ = stream_run(
        scratch, lambda: recording.rerun(scratch, recorded_results=recorded_results), output
    )
    raise typer.Exit(code)


def _is_graph(spec: str) -> bool:

    return isinstance(or_exit(lambda: load_object(spec)), Graph)


def explain_suspension(
    result: RunResult[object], agent_spec: str, store: str | None, output: str
) -> None:
    """Print what a suspended run waits for and the exact command that resumes it.

    In ``--json`` mode this goes to stderr, so stdout stays JSON lines.
    """
    state = result.state
    if state is None:
        return
    pending = pending_of_state(json.loads(run_state_to_json(state))["state"])
    out = (
        Console(stderr=True, highlight=False)
        if output == "json"
        else console(plain=output == "plain")
    )
    out.print(Text(f"\nRun {result.run_id} is waiting for a decision on:", style="bold"))
    print_pending(out, pending, resume_command(result.run_id, agent_spec, store, pending))


async def _pending(stores: Stores, run_id: str) -> list[Pending]:
    _, entries = await _load(stores, run_id)
    return pending_of_entries(entries)


def approval_classes(entries: list[JournalEntry]) -> dict[str, str]:
    """How each call pending in the last ``interrupt_raised`` entry is classified, by call id.

    Each value reads ``key=value, ...`` (empty when the request carries no classification).
    """
    raised = [e for e in entries if e.kind == "interrupt_raised"]
    if not raised:
        return {}
    state = as_object(raised[-1].payload.get("state"))
    found: dict[str, str] = {}
    for item in as_objects(state.get("pending_approvals")):
        call, request = as_object(item.get("call")), as_object(item.get("request"))
        classification = as_object(request.get("classification"))
        found[str(call.get("id", ""))] = ", ".join(f"{k}={v}" for k, v in classification.items())
    return found


def entry_summary(entry: JournalEntry) -> str:
    """One line about a journal entry: the call, the result, the text, the status."""
    payload = entry.payload
    match entry.kind:
        case "tool_call_started" | "tool_result":
            call = format_call(
                str(payload.get("tool_name", "")), str(payload.get("arguments", "") or "")
            )
            if entry.kind == "tool_call_started":
                return call
            mark = "✗" if payload.get("is_error") else "→"
            return f"{call} {mark} {preview(str(payload.get('content', '')), 48)}"
        case "model_response":
            message = as_object(payload.get("message"))
            calls = as_list(message.get("tool_calls"))
            text = _message_text(message)
            parts = [f'"{preview(text, 48)}"'] if text else []
            if calls:
                parts.append(f"{len(calls)} tool call{'s' if len(calls) != 1 else ''}")
            return ", ".join(parts) or "(empty)"
        case "interrupt_raised":
            pending = as_objects(payload.get("pending"))
            names = ", ".join(f"{p.get('tool_name')} ({p.get('tool_call_id')})" for p in pending)
            return f"awaiting approval: {names}" if names else "awaiting a decision"
        case "interrupt_decided":
            return preview(json.dumps(payload.get("approvals") or payload), 72)
        case "run_ended":
            state = as_object(payload.get("state"))
            return str(state.get("status", ""))
        case _:
            return graph_entry_summary(entry.kind, payload)


def run_kind(record: RunRecord) -> str:
    """``graph`` for a graph execution (its agent column is ``graph:<name>``), else ``agent``."""
    return "graph" if record.agent.startswith("graph:") else "agent"


def _message_text(message: Mapping[str, JsonValue]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return " ".join(str(p.get("text", "")) for p in as_objects(content))


async def _load(stores: Stores, run_id: str) -> tuple[RunRecord, list[JournalEntry]]:
    record = await stores.journal.get_run(run_id)
    if record is None:
        raise UserError(f"No run {run_id!r} in the store {stores.url}.")
    return record, await stores.journal.read(run_id)


def _with_store(url: str | None, work: Callable[[Stores], Awaitable[_T]]) -> _T:
    async def go() -> _T:
        async with open_store(url or default_store_url()) as stores:
            return await work(stores)

    try:
        return asyncio.run(go())
    except BastionError as exc:  # misuse, an unreachable store, a damaged journal
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    except KeyboardInterrupt:
        error("interrupted")
        raise typer.Exit(EXIT_INTERRUPTED) from None


def _record_json(record: RunRecord) -> dict[str, str | int]:
    return {
        "run_id": record.run_id,
        "kind": run_kind(record),
        "agent": record.agent,
        "status": record.status,
        "last_seq": record.last_seq,
        "created_at": record.created_at.isoformat(),
        "updated_at": record.updated_at.isoformat(),
    }


def _write_json(value: Mapping[str, object]) -> None:
    sys.stdout.write(json.dumps(value, ensure_ascii=False) + "\n")
    sys.stdout.flush()
