"""The ``bastion`` typer application: ``run``, ``demo`` and ``--version``.

Each command loads an agent, streams one run through the renderer (or as JSON lines), and
turns the outcome into an exit code: 0 when the run completed, 1 when it did not, 2 when
the command was used wrongly (bad spec, misconfigured agent), 130 when interrupted.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable
from typing import Annotated, Literal, TypeAlias, TypeVar

import typer
from rich.console import Console
from rich.text import Text

import bastion
from bastion.agent import Agent
from bastion.core import AgentEvent, RunStatus, UserError, dump_event

from ._demo import find_demo
from ._load import SpecError, load_agent, load_object
from ._render import Renderer

__all__ = ["app", "main"]

Output: TypeAlias = Literal["auto", "plain", "json"]
_T = TypeVar("_T")

EXIT_FAILED_RUN = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

app = typer.Typer(
    name="bastion",
    help="Bastion: run LLM agents you can trust with real work.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)

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
def run(
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
) -> None:
    """Run an agent on a prompt and watch it work, live."""
    agent = _on_model(_or_exit(lambda: load_agent(spec)), model)
    raise typer.Exit(_run(agent, prompt, "json" if json_lines else "plain" if plain else "auto"))


@app.command()
def demo(
    plain: Annotated[bool, _PLAIN] = False, model: Annotated[str | None, _MODEL] = None
) -> None:
    """Run the demo app: an agent with real tools on this repository, offline by default.

    The model is a scripted stand-in unless BASTION_MODEL names a real one, e.g.
    BASTION_MODEL=openai:gpt-4o-mini.
    """
    path = _or_exit(find_demo)
    agent = _on_model(_or_exit(lambda: load_agent(f"{path}:agent")), model)
    prompt = _or_exit(lambda: load_object(f"{path}:PROMPT"))
    raise typer.Exit(_run(agent, str(prompt), "plain" if plain else "auto"))


def main() -> None:
    """Run the ``bastion`` command (the console-script entry point)."""
    app(prog_name="bastion")


def _run(agent: Agent[object, object], prompt: str, output: Output) -> int:
    """Stream one run to stdout and return the exit code."""
    try:
        if output == "json":
            status = asyncio.run(_stream(agent, prompt, _print_json))
        else:
            console = _console(plain=output == "plain")
            with Renderer(console, live=console.is_terminal) as renderer:
                status = asyncio.run(_stream(agent, prompt, renderer.handle))
    except UserError as exc:
        _error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        _error("interrupted")
        return EXIT_INTERRUPTED
    return 0 if status == "completed" else EXIT_FAILED_RUN


async def _stream(
    agent: Agent[object, object], prompt: str, on_event: Callable[[AgentEvent], None]
) -> RunStatus:
    async with agent.stream(prompt) as stream:
        async for event in stream:
            on_event(event)
    return stream.result.status


def _print_json(event: AgentEvent) -> None:
    sys.stdout.write(dump_event(event).decode() + "\n")
    sys.stdout.flush()


def _console(*, plain: bool) -> Console:
    if plain:
        return Console(force_terminal=False, no_color=True, highlight=False, emoji=False)
    return Console(highlight=False, emoji=False)


def _on_model(agent: Agent[object, object], model: str | None) -> Agent[object, object]:
    if model is None:
        return agent
    try:
        return agent.with_model(model)
    except UserError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


def _or_exit(load: Callable[[], _T]) -> _T:
    try:
        return load()
    except SpecError as exc:
        _error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


def _error(message: str) -> None:
    text = Text(f"error: {' '.join(message.split())}", style="bold red")
    Console(stderr=True, highlight=False, soft_wrap=True).print(text)
