"""``bastion chat``: a conversation with an agent in the terminal, on a :class:`Session`.

Each line sent is one turn of the session, streamed as it comes; calls that need approval
are asked inline; ``/`` lines are commands (``_chat_commands.py``). Ctrl-C during a turn
aborts the turn (the session, its history and its store stay); Ctrl-D quits.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from collections.abc import Awaitable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, TypeVar

import typer
from rich.console import Console

from bastion.agent import Agent
from bastion.core import BastionError, UserError
from bastion.sessions import Session
from bastion.stores import Stores, open_store

from ._chat_commands import Commands
from ._chat_view import ChatView
from ._common import EXIT_USAGE, console, error, or_exit
from ._format import format_call
from ._load import load_agent

if TYPE_CHECKING:
    from bastion.sessions import Session

__all__ = ["Chat", "chat"]

_T = TypeVar("_T")
_HISTORY_ENV = "BASTION_CHAT_HISTORY"


def chat(
    spec: Annotated[
        str | None,
        typer.Argument(
            metavar="[MODULE:AGENT]",
            help="The agent ('package.module:agent' or 'path/to/file.py:agent'); "
            "leave it out to chat with a bare model (--model).",
            show_default=False,
        ),
    ] = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model", metavar="PROVIDER:MODEL", help="The model to chat with.", show_default=False
        ),
    ] = None,
    store: Annotated[
        str | None,
        typer.Option(
            "--store",
            metavar="URL",
            help="Where sessions are kept (default: the agent's, else $BASTION_STORE, "
            "else ./.bastion/bastion.db).",
            show_default=False,
        ),
    ] = None,
    plain: Annotated[bool, typer.Option("--plain", help="No colors (automatic in pipes).")] = False,
) -> None:
    """Chat with an agent: streamed answers, tool panels, inline approvals, /commands."""
    agent = _agent(spec, model)
    try:
        stores = (
            agent.config.store
            if agent.config.store is not None and store is None
            else open_store(store)
        )
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None
    raise typer.Exit(Chat(agent.with_store(stores), stores, console(plain=plain)).run())


def _agent(spec: str | None, model: str | None) -> Agent[Any, Any]:
    if spec is None and model is None:
        error("bastion chat needs an agent (MODULE:AGENT) or a model (--model PROVIDER:MODEL).")
        raise typer.Exit(EXIT_USAGE)
    try:
        if spec is None:
            assert model is not None
            return Agent("chat", model=model)
        agent = or_exit(lambda: load_agent(spec))
        return agent if model is None else agent.with_model(model)
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None


class Chat:
    """The REPL: reads lines, runs turns on one event loop, asks for approvals."""

    def __init__(self, agent: Agent[Any, Any], stores: Stores, out: Console) -> None:
        self.agent = agent
        self.stores = stores
        self.view = ChatView(console=out)
        self.loop = asyncio.new_event_loop()
        self.session: Session = Session(agent)
        self.commands = Commands(self)

    def run(self) -> int:
        """Chat until end of input or ``/exit``; the exit code."""
        try:
            self.call(self.stores.open())
        except BastionError as exc:  # an unreachable store, a bad schema
            error(str(exc))
            self.loop.close()
            return EXIT_USAGE
        self.view.attach(self.session)
        history = _History()
        self.view.note(
            f"bastion chat: {self.agent.name} on {self.agent.config.model.key}, session "
            f"{self.session.id}. /help lists commands; Ctrl-C cancels a turn, Ctrl-D quits."
        )
        try:
            while (line := _read("you> ")) is not None:
                if line.startswith("/"):
                    if not self.commands.run(line):
                        break
                elif line:
                    self.turn(line)
        finally:
            history.save()
            self.call(self.agent.aclose())
            self.call(self.stores.close())
            self.loop.close()
        return 0

    def call(self, work: Awaitable[_T]) -> _T:
        """Run ``work`` on the chat's loop; Ctrl-C meanwhile aborts the session's turn."""
        loop = self.loop
        with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
            loop.add_signal_handler(signal.SIGINT, self._cancel)
        try:
            return loop.run_until_complete(work)
        finally:
            with contextlib.suppress(ValueError, RuntimeError, NotImplementedError):
                loop.remove_signal_handler(signal.SIGINT)

    def _cancel(self) -> None:
        self.session.abort()

    def turn(self, text: str) -> None:
        """Send ``text`` and show the turn until it ends, asking for each approval."""
        try:
            self.call(self._send(text))
            while pending := self.session.pending_approvals:
                for request in pending:
                    self._ask(
                        request.tool_call_id,
                        format_call(request.tool_name, json.dumps(request.arguments)),
                    )
                self.call(self.session.wait_for_idle())
        except (BastionError, RuntimeError) as exc:  # the turn failed; the session goes on
            self.view.note(f"error: {exc}", "bold red")
        self.view.end_line()

    async def _send(self, text: str) -> None:
        self.session.send(text)
        await self.session.wait_for_idle()

    def _ask(self, call_id: str, call: str) -> None:
        self.view.end_line()
        answer = _read(f"approve {call}? [y/N] ")
        granted = answer is not None and answer.lower() in {"y", "yes"}
        self.call(self._decide(call_id, granted=granted))
        self.view.note("approved" if granted else "denied", "green" if granted else "yellow")

    async def _decide(self, call_id: str, *, granted: bool) -> None:
        if granted:
            self.session.approve(call_id)
        else:
            self.session.deny(call_id, "The user said no.")

    def switch(self, session: Session) -> None:
        """Go on with ``session`` (resumed, compacted, or on another model)."""
        self.session = session
        self.view.attach(session)


def _read(prompt: str) -> str | None:
    """One line from the user, ``None`` at end of input; Ctrl-C at the prompt clears it."""
    while True:
        try:
            return input(prompt).strip()
        except EOFError:
            return None
        except KeyboardInterrupt:
            print()  # a fresh prompt, as shells do


class _History:
    """Line editing and history with readline, kept in ``$BASTION_CHAT_HISTORY``.

    ``input()`` on a terminal records each line; the file carries them between chats.
    """

    def __init__(self) -> None:
        self.path = os.environ.get(_HISTORY_ENV)
        try:
            import readline
        except ImportError:  # no readline (Windows): plain input()
            self.readline = None
            return
        self.readline = readline
        if self.path and Path(self.path).exists():
            with contextlib.suppress(OSError):
                readline.read_history_file(self.path)

    def save(self) -> None:
        """Write the history file, if one is named."""
        if self.readline is not None and self.path:
            with contextlib.suppress(OSError):
                self.readline.write_history_file(self.path)
