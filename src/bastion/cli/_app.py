"""The ``bastion`` typer application: ``run``, ``runs``, ``graph``, ``serve``, ``chat`` and more.

Each command loads an agent, streams one run through the renderer (or as JSON lines), and
turns the outcome into an exit code: 0 when the run completed, 1 when it did not, 2 when
the command was used wrongly (bad spec, misconfigured agent), 130 when interrupted.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Annotated

import typer
from rich.text import Text

import bastion
from bastion.agent import Agent
from bastion.core import UserError

from ._chat import chat
from ._common import EXIT_USAGE, Output, command_group, console, error, or_exit, stream_run
from ._demo import find_demo
from ._format import format_call
from ._graph_cli import graph_resume, graph_run
from ._graph_store import fork, history
from ._graph_store import show as graph_show
from ._load import load_agent, load_object
from ._mcp import mcp_app
from ._models import models
from ._prune import prune
from ._runs import explain_suspension, runs_app
from ._serve import serve
from ._temporal import run_on_temporal, worker
from ._temporal_client import TEMPORAL_OPTION, TaskQueue, exit_after_temporal
from ._temporal_graph import graph_answer

__all__ = ["app", "main"]


app = command_group("bastion", "Bastion: run LLM agents you can trust with real work.")

_PLAIN = typer.Option(
    "--plain", help="Print each line once, without colors or animation (automatic in pipes)."
)
_JSON = typer.Option("--json", help="Print every event as one JSON line, for piping.")
_MODEL = typer.Option(
    "--model",
    metavar="PROVIDER:MODEL",
    help="Run on this model instead of the agent's own, e.g. openai:gpt-4.1-mini.",
    show_default=False,
)


runs_app.command("prune")(prune)
app.add_typer(runs_app, name="runs")
graph_app = command_group(
    "graph", "Durable graph executions: run, resume, show, history and fork them."
)
graph_app.command("run")(graph_run)
graph_app.command("resume")(graph_resume)
graph_app.command("show")(graph_show)
graph_app.command("history")(history)
graph_app.command("fork")(fork)
graph_app.command("answer")(graph_answer)
app.add_typer(graph_app, name="graph")
app.command("models")(models)
app.add_typer(mcp_app, name="mcp")
app.command("serve")(serve)
app.command("chat")(chat)
app.command("worker")(worker)


def _print_version(value: bool) -> None:
    if value:
        typer.echo(f"bastion {bastion.__version__}")
        raise typer.Exit


@app.callback()
def _root(
    show_version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_print_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    """Bastion: run LLM agents you can trust with real work."""


@app.command()
def run(  # noqa: PLR0917 (typer options)
    spec: Annotated[
        str,
        typer.Argument(
            metavar="MODULE:ATTR",
            help="The agent: 'package.module:agent' or 'path/to/file.py:agent' (or a "
            "function of no arguments returning one).",
            show_default=False,
        ),
    ],
    prompt: Annotated[
        str, typer.Argument(metavar="PROMPT", help="What to ask the agent.", show_default=False)
    ],
    json_lines: Annotated[bool, _JSON] = False,
    plain: Annotated[bool, _PLAIN] = False,
    model: Annotated[str | None, _MODEL] = None,
    temporal: Annotated[str | None, TEMPORAL_OPTION] = None,
    task_queue: TaskQueue = None,
) -> None:
    """Run an agent on a prompt and watch it work, live (or as a Temporal workflow)."""
    output: Output = "json" if json_lines else "plain" if plain else "auto"
    if temporal is not None:
        if model is not None:
            error("--model does not apply with --temporal: the workers run the agent's model.")
            raise typer.Exit(EXIT_USAGE)
        raise typer.Exit(run_on_temporal(spec, prompt, temporal, task_queue, output))
    if task_queue is not None:
        error("--task-queue needs --temporal ADDRESS.")
        raise typer.Exit(EXIT_USAGE)
    agent = _on_model(or_exit(lambda: load_agent(spec)), model)
    code, result = stream_run(agent, lambda: agent.stream(prompt), output)
    if result is not None and result.status == "awaiting_approval":
        if agent.config.store is None:  # nothing journaled it: no other process can resume it
            error(
                f"Run {result.run_id} is waiting for a decision, but agent {agent.name!r} has "
                "no store, so it cannot be resumed from another process. Give the agent a "
                "store (store='sqlite:///app.db') to approve it with 'bastion runs resume'."
            )
        else:
            explain_suspension(result, spec, None, output)
    raise typer.Exit(code)


@app.command()
def demo(
    plain: Annotated[bool, _PLAIN] = False,
    model: Annotated[str | None, _MODEL] = None,
    next_command_file: Annotated[
        Path | None,
        typer.Option(
            "--next-command-file",
            metavar="FILE",
            help="Also write the command that resumes the suspended run to FILE.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Run the demo app: an agent with real tools on this repository, offline by default.

    The run is journaled to a SQLite store and suspends when the agent asks to write its
    report (a side effect a human approves); the command printed last resumes it, in a new
    process, from the store. The model is a scripted stand-in unless BASTION_MODEL names a
    real one, e.g. BASTION_MODEL=openai:gpt-4o-mini.
    """
    path = or_exit(find_demo)
    agent = _on_model(or_exit(lambda: load_agent(f"{path}:agent")), model)
    prompt = or_exit(lambda: load_object(f"{path}:PROMPT"))
    code, result = stream_run(
        agent, lambda: agent.stream(str(prompt)), "plain" if plain else "auto"
    )
    state = result.state if result is not None else None
    if result is None or result.status != "awaiting_approval" or state is None:
        raise typer.Exit(code)
    command = resume_command(
        result.run_id, path, agent, [p.call.id for p in state.pending_approvals]
    )
    out = console(plain=plain)
    calls = ", ".join(format_call(p.call.name, p.call.arguments) for p in state.pending_approvals)
    out.print(
        Text(f"\nThe run is waiting for your approval of {calls}.", style="bold"), soft_wrap=True
    )
    where = agent.config.store.url if agent.config.store is not None else "the store"
    out.print(f"It is journaled in {where}. Approve it from a new process with:\n", soft_wrap=True)
    out.print(Text(f"  {command}\n", style="bold cyan"), soft_wrap=True)
    if next_command_file is not None:
        next_command_file.parent.mkdir(parents=True, exist_ok=True)
        next_command_file.write_text(command + "\n", encoding="utf-8")
    raise typer.Exit(0)


def resume_command(
    run_id: str, path: Path, agent: Agent[object, object], call_ids: list[str]
) -> str:
    """The ``bastion runs resume`` command line that approves ``call_ids`` of a demo run."""
    try:
        spec = path.relative_to(Path.cwd()).as_posix()
    except ValueError:
        spec = str(path)
    parts = ["bastion", "runs", "resume", run_id, "--agent", f"{spec}:agent"]
    if agent.config.store is not None:
        parts += ["--store", agent.config.store.url]
    for call_id in call_ids:
        parts += ["--approve", call_id]
    return shlex.join(parts)


def main() -> None:
    """Run the ``bastion`` command (the console-script entry point)."""
    try:
        app(prog_name="bastion")
    except SystemExit as done:
        exit_after_temporal(
            0 if done.code is None else done.code if isinstance(done.code, int) else 1
        )
        raise


def _on_model(agent: Agent[object, object], model: str | None) -> Agent[object, object]:
    if model is None:
        return agent
    try:
        return agent.with_model(model)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
