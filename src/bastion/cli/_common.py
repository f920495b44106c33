"""Helpers every ``bastion`` command shares: exit codes, consoles, one-line errors."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sys
from collections.abc import Callable, Generator
from typing import Literal, TypeAlias, TypeVar

import typer
from rich.console import Console
from rich.text import Text
from typer.models import OptionInfo

from bastion.agent import Agent, AgentStream, RunResult
from bastion.core import AgentEvent, BastionError, JsonValue, dump_event
from bastion.stores import DEFAULT_STORE_URL, STORE_ENV

from ._load import SpecError
from ._render import Renderer

__all__ = [
    "EXIT_FAILED_RUN",
    "EXIT_INTERRUPTED",
    "EXIT_USAGE",
    "Output",
    "command_group",
    "console",
    "default_store_url",
    "error",
    "graph_input",
    "or_exit",
    "value_option",
    "stream_run",
]

_T = TypeVar("_T")
Output: TypeAlias = Literal["auto", "plain", "json"]


def value_option(flag: str, metavar: str, help: str) -> OptionInfo:
    """An option that takes a value: its help shows ``metavar``, not a default."""
    info: OptionInfo = typer.Option(flag, metavar=metavar, help=help, show_default=False)
    return info


def command_group(name: str, help: str) -> typer.Typer:
    """A ``bastion`` command group: help when called bare, no shell completion, plain errors.

    Click's own help layout (no rich markup): a flag shows as ``--json``, not as
    ``--json <bool>``.
    """
    return typer.Typer(
        name=name,
        help=help,
        no_args_is_help=True,
        add_completion=False,
        pretty_exceptions_enable=False,
        rich_markup_mode=None,
    )


EXIT_FAILED_RUN = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


def console(*, plain: bool) -> Console:
    """The stdout console: plain text (no colors, no animation) or rich's own detection."""
    if plain:
        return Console(force_terminal=False, no_color=True, highlight=False, emoji=False)
    return Console(highlight=False, emoji=False)


def or_exit(load: Callable[[], _T]) -> _T:
    """Return ``load()``; a :class:`SpecError` is printed and exits 2."""
    try:
        return load()
    except SpecError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


def error(message: str) -> None:
    """Print ``error: message`` on one red line to stderr."""
    text = Text(f"error: {' '.join(message.split())}", style="bold red")
    Console(stderr=True, highlight=False, soft_wrap=True).print(text)


def stream_run(
    agent: Agent[object, object], open_stream: Callable[[], AgentStream[object]], output: Output
) -> tuple[int, RunResult[object] | None]:
    """Stream one run (new or resumed) to stdout; return the exit code and the result.

    The exit code is 0 when the run completed, 1 when it did not, 2 on a ``UserError``
    (bad input, a run that cannot be resumed), 130 when interrupted. The agent is closed
    (``aclose``) afterwards, so a store it opened is released.
    """
    interrupted: list[str] = []
    try:
        if output == "json":
            result = asyncio.run(_stream(agent, open_stream, _print_json, interrupted))
        else:
            out = console(plain=output == "plain")
            with Renderer(out, live=out.is_terminal) as renderer:
                result = asyncio.run(_stream(agent, open_stream, renderer.handle, interrupted))
    except BastionError as exc:  # misuse, an unreachable store, an unreadable journal
        error(str(exc))
        return EXIT_USAGE, None
    except KeyboardInterrupt:
        error("interrupted")
        return EXIT_INTERRUPTED, None
    if interrupted:
        error(f"interrupted: run {interrupted[0]} was aborted (status {result.status!r})")
        return EXIT_INTERRUPTED, result
    return (0 if result.status == "completed" else EXIT_FAILED_RUN), result


async def _stream(
    agent: Agent[object, object],
    open_stream: Callable[[], AgentStream[object]],
    on_event: Callable[[AgentEvent], None],
    interrupted: list[str],
) -> RunResult[object]:
    try:
        async with open_stream() as stream:
            with _abort_on_sigint(stream, interrupted):
                async for event in stream:
                    on_event(event)
        return stream.result
    finally:
        await agent.aclose()


@contextlib.contextmanager
def _abort_on_sigint(stream: AgentStream[object], interrupted: list[str]) -> Generator[None]:
    """Ctrl-C aborts the run, which then ends (and is journaled) ``aborted``, not live.

    A second Ctrl-C interrupts at once, as Python does by default.
    """
    loop = asyncio.get_running_loop()

    def on_sigint() -> None:
        if interrupted:  # the second one: stop waiting for the run to wind down
            loop.remove_signal_handler(signal.SIGINT)
            raise KeyboardInterrupt
        interrupted.append(stream.run_id)
        stream.abort()

    try:
        loop.add_signal_handler(signal.SIGINT, on_sigint)
    except (ValueError, RuntimeError, NotImplementedError):  # not the main thread; Windows
        yield
        return
    try:
        yield
    finally:
        loop.remove_signal_handler(signal.SIGINT)


def _print_json(event: AgentEvent) -> None:
    sys.stdout.write(dump_event(event).decode() + "\n")
    sys.stdout.flush()


def default_store_url() -> str:
    """The store the commands use: ``$BASTION_STORE``, else the embedded default."""
    return os.environ.get(STORE_ENV) or DEFAULT_STORE_URL


def graph_input(text: str | None) -> JsonValue:
    """A graph's ``--input``: JSON when it parses, else the text as a string."""
    if text is None:
        return None
    try:
        value: JsonValue = json.loads(text)
        return value
    except ValueError:
        return text  # plain text is a string input
