"""``bastion worker``, ``run --temporal``, ``runs resume --temporal``: agents on Temporal.

The same ``module:attr`` spec as ``bastion run`` names the agents; a plain
:class:`~bastion.Agent` is wrapped in a :class:`~bastion.distributed.TemporalAgent` (queue
``bastion.<name>`` unless ``--task-queue``). ``temporalio`` is imported only when a command
uses it. Exit codes follow ``bastion run``: 0 completed, 1 not completed (failed, or parked
for a decision), 2 used wrongly (bad spec, unreachable server, a refused decision).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import signal
import sys
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer
from rich.text import Text

from bastion.agent import Agent
from bastion.core import JsonValue, UserError

from ._common import EXIT_FAILED_RUN, EXIT_USAGE, Output, console, error, or_exit
from ._decisions import build_directive
from ._format import format_call
from ._load import SpecError, _call_factory, load_object
from ._temporal_client import TEMPORAL_OPTION, TaskQueue, connect, refusing, run_client
from ._temporal_events import event_printer, logged_seq, show_run
from ._temporal_graph import holds_graphs, made_value, serve_graphs

if TYPE_CHECKING:
    from temporalio.client import Client

    from bastion.distributed import (
        TemporalAgent,
        WorkflowInterrupt,
        WorkflowResult,
        WorkflowStatus,
    )

__all__ = [
    "cancel_on_temporal",
    "resume_on_temporal",
    "run_on_temporal",
    "worker",
]

_T = TypeVar("_T")


def worker(
    spec: Annotated[
        str,
        typer.Argument(
            metavar="MODULE:ATTR",
            help="An agent, a TemporalAgent, a graph, a TemporalGraph, or a list or dict "
            "of them (or a function of no arguments returning one).",
            show_default=False,
        ),
    ],
    address: Annotated[str, TEMPORAL_OPTION],
    task_queue: TaskQueue = None,
) -> None:
    """Serve agents on Temporal: run their workflows, model calls and tool calls.

    Runs until SIGINT or SIGTERM, then finishes the calls in flight and exits.
    """
    loaded = or_exit(lambda: made_value(load_object(spec), spec))
    if holds_graphs(loaded):  # a graph, or graphs: their workflows, nodes and agents
        serve_graphs(loaded, address, task_queue)
        return
    agents = or_exit(lambda: temporal_agents(loaded, spec, task_queue))
    try:
        asyncio.run(_serve(agents, address))
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


def run_on_temporal(
    spec: str, prompt: str, address: str, task_queue: str | None, output: Output
) -> int:
    """Start a workflow of the agent ``spec`` names, print its events and how it ends.

    The events are printed as the workers publish them when the agent has an event store;
    the exit code is that of :func:`_outcome`.
    """
    [agent] = _one_agent(spec, task_queue)
    with event_printer(agent, output) as show:

        async def go(client: Client) -> tuple[str, WorkflowStatus]:
            handle = await agent.start(client, prompt)
            if show is not None:
                return handle.id, await show_run(agent, client, handle.id, show)
            return handle.id, await agent.settle(client, handle.id)

        return _outcome(agent, spec, address, output, go, shown=show is not None)


def resume_on_temporal(  # noqa: PLR0917 (the options of runs resume)
    workflow_id: str,
    spec: str,
    address: str,
    task_queue: str | None,
    options: tuple[Sequence[str], Sequence[str], Sequence[str], Sequence[str]],
    output: Output,
) -> int:
    """Send the decisions to the parked workflow as updates; print the outcome.

    ``options`` are the ``--approve``, ``--deny``, ``--happened`` and ``--raise`` values,
    read as for a local run: ``--deny`` of a pending interrupt denies it, ``--raise
    ID=MAX`` raises the limit it waits on. Interrupts go as the ``resolve`` update, call
    decisions as ``decide``. With an event store, the events of the resumed run are printed
    as they are published.
    """
    [agent] = _one_agent(spec, task_queue)
    approve, deny, happened, raise_to = options
    if not (approve or deny or happened or raise_to):
        error(
            "Give a decision: --approve CALL_ID, --deny ID[:REASON], --happened CALL_ID or "
            "--raise INTERRUPT_ID=MAX."
        )
        raise typer.Exit(EXIT_USAGE)

    with event_printer(agent, output) as show:

        async def go(client: Client) -> tuple[str, WorkflowStatus]:

            after = 0 if show is None else await logged_seq(agent, workflow_id)
            # Which ids are interrupts (and the limit each waits on), and what still waits.
            status = await agent.status(client, workflow_id)
            interrupts = {i.id: i.to_dict() for i in status.interrupts}
            directive = build_directive(approve, deny, happened, raise_to, interrupts)
            assert directive is not None  # some option was given
            calls_left = [p.tool_call_id for p in status.pending]
            interrupts_left = list(interrupts)
            if directive.interrupts:
                interrupts_left = await agent.resolve(client, workflow_id, *directive.interrupts)
            if directive.approvals:
                calls_left = await agent.decide(client, workflow_id, *directive.approvals)
            if show is not None and not calls_left and not interrupts_left:  # it goes on
                return workflow_id, await show_run(agent, client, workflow_id, show, after)
            return workflow_id, await agent.settle(client, workflow_id)

        return _outcome(agent, spec, address, output, go, shown=show is not None)


def cancel_on_temporal(
    workflow_id: str, spec: str, address: str, task_queue: str | None, output: Output
) -> int:
    """Cancel the workflow of a run; print how the run ended (``aborted``, or as it had).

    Exit code 0 once the run has ended, whatever its status: what was asked is done.
    """
    [agent] = _one_agent(spec, task_queue)

    async def go() -> WorkflowResult[object]:
        client = await connect(address)
        await refusing(agent.cancel(client, workflow_id))
        return await refusing(agent.result(client, workflow_id))

    result = run_client(go)
    if isinstance(result, int):
        return result
    if output == "json":
        _write_json(workflow_id, None, result)
    else:
        _print_result(result, output, shown=False)
    return 0


def temporal_agents(
    value: object, spec: str, task_queue: str | None
) -> list[TemporalAgent[object]]:
    """The Temporal agents a loaded ``value`` names (an agent, a list or dict of them, …)."""
    try:
        from bastion.distributed import TemporalAgent
    except ImportError as exc:  # the extra is not installed
        raise SpecError(
            f"--temporal needs the temporal extra: pip install 'bastion[temporal]' ({exc})."
        ) from None

    if not isinstance(value, Agent | TemporalAgent):
        value = _call_factory(value, spec)
    items: list[object]
    if isinstance(value, Mapping):
        items = list(value.values())  # pyright: ignore[reportUnknownArgumentType, reportUnknownMemberType]
    elif isinstance(value, list | tuple):
        items = list(value)  # pyright: ignore[reportUnknownArgumentType]
    else:
        items = [value]
    found: list[TemporalAgent[object]] = []
    for item in items:
        if isinstance(item, TemporalAgent):
            if task_queue is not None and item.task_queue != task_queue:  # pyright: ignore[reportUnknownMemberType]
                raise SpecError(
                    f"{spec!r} holds a TemporalAgent on queue {item.task_queue!r}; set its "  # pyright: ignore[reportUnknownMemberType]
                    "task_queue instead of --task-queue."
                )
            found.append(item)  # pyright: ignore[reportUnknownArgumentType]
        elif isinstance(item, Agent):
            try:
                found.append(TemporalAgent(item, task_queue=task_queue))  # pyright: ignore[reportUnknownArgumentType]
            except UserError as exc:
                raise SpecError(str(exc)) from None
        else:
            raise SpecError(
                f"{spec!r} holds a {type(item).__name__}, not a bastion Agent or TemporalAgent."
            )
    if not found:
        raise SpecError(f"{spec!r} holds no agent.")
    return found


def _one_agent(spec: str, task_queue: str | None) -> list[TemporalAgent[object]]:
    agents = or_exit(lambda: temporal_agents(load_object(spec), spec, task_queue))
    if len(agents) != 1:
        error(f"{spec!r} holds {len(agents)} agents; name one, e.g. 'module:agents.support'.")
        raise typer.Exit(EXIT_USAGE)
    return agents


async def _serve(agents: Sequence[TemporalAgent[object]], address: str) -> None:
    """Run one worker per task queue until SIGINT or SIGTERM."""
    from temporalio.worker import Worker

    client = await connect(address)
    queues: dict[str, list[TemporalAgent[object]]] = {}
    for agent in agents:
        queues.setdefault(agent.task_queue, []).append(agent)
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop.set)
    async with contextlib.AsyncExitStack() as stack:
        for queue, served in queues.items():
            from bastion.distributed._multi import worker_parts

            workflows, activities = worker_parts([(a.workflows, a.activities) for a in served])
            await stack.enter_async_context(
                Worker(client, task_queue=queue, workflows=workflows, activities=activities)
            )
            names = ", ".join(agent.agent.name for agent in served)
            print(f"Serving {names} on queue {queue!r} at {address}.", flush=True)
        await stop.wait()
        print("Stopping: finishing the calls in flight.", flush=True)
    print("Stopped.", flush=True)


def _outcome(
    agent: TemporalAgent[object],
    spec: str,
    address: str,
    output: Output,
    work: Callable[[Client], Awaitable[tuple[str, WorkflowStatus]]],
    *,
    shown: bool = False,
) -> int:
    """Run ``work`` (it ends once the run parks or ends), print the outcome; the exit code.

    ``shown``: ``work`` printed the run's events, its output among them.
    """

    async def go() -> tuple[str, WorkflowStatus, WorkflowResult[object] | None]:
        client = await connect(address)
        workflow_id, status = await refusing(work(client))
        if status.status == "awaiting_approval":
            return workflow_id, status, None
        return workflow_id, status, await refusing(agent.result(client, workflow_id))

    outcome = run_client(go)
    if isinstance(outcome, int):
        return outcome
    workflow_id, status, result = outcome
    if output == "json":
        _write_json(workflow_id, status, result)
    elif result is None:
        out = console(plain=output == "plain")
        for line in _pending_lines(status, workflow_id, spec, address):
            out.print(Text(line), soft_wrap=True)
    else:
        _print_result(result, output, shown=shown)
    return 0 if result is not None and result.ok else EXIT_FAILED_RUN


def _print_result(result: WorkflowResult[object], output: Output, *, shown: bool) -> None:
    out = console(plain=output == "plain")
    if result.ok and not shown:  # shown: the events showed the output
        value = result.output
        out.print(Text(value if isinstance(value, str) else json.dumps(value)), soft_wrap=True)
    elif result.error is not None:
        error(f"run {result.status}: {result.error.message}")
    usage = result.usage
    out.print(
        Text(
            f"{result.workflow_id} · {result.status} · {result.steps} model calls · "
            f"{usage.total_tokens} tokens",
            style="dim",
        ),
        soft_wrap=True,
    )


def _write_json(
    workflow_id: str, status: WorkflowStatus | None, result: WorkflowResult[object] | None
) -> None:
    from pydantic import TypeAdapter

    if result is None:
        assert status is not None  # parked: its status says on what
        body: dict[str, JsonValue] = json.loads(TypeAdapter(type(status)).dump_json(status))
        body = {"type": "workflow_parked", "workflow_id": workflow_id, **body}
    else:
        as_json = TypeAdapter(type(result)).dump_json(result)
        body = {"type": "workflow_end", **json.loads(as_json)}
    sys.stdout.write(json.dumps(body) + "\n")
    sys.stdout.flush()


def _pending_lines(status: WorkflowStatus, workflow_id: str, spec: str, address: str) -> list[str]:
    lines = [f"Run {workflow_id} is waiting for a decision on:"]
    parts = ["bastion", "runs", "resume", workflow_id, "--agent", spec, "--temporal", address]
    for request in status.pending:
        call = format_call(request.tool_name, json.dumps(request.arguments))
        lines.append(f"  {request.tool_call_id}  {call}")
        parts += ["--approve", request.tool_call_id]
    for interrupt in status.interrupts:
        lines.append(f"  {interrupt.id}  {_limit(interrupt)}  [interrupt]: {interrupt.reason}")
        parts += ["--raise", f"{interrupt.id}=MAX"]
    lines += ["Decide it with (or --deny ID[:REASON]):", f"  {shlex.join(parts)}"]
    return lines


def _limit(interrupt: WorkflowInterrupt) -> str:
    """``llm cost per day: 0.6 of max 0.5``: the limit an interrupt waits on."""
    what = f"{interrupt.oracle} {interrupt.limit_type or interrupt.kind}"
    if interrupt.window:
        what += f" per {interrupt.window}"
    if interrupt.max is not None:
        what += f": {interrupt.current or 0:g} of max {interrupt.max:g}"
    return what
