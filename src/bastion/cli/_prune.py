"""``bastion runs prune``: delete finished runs (and optionally sessions) by age or count.

Registered on ``runs_app`` by :mod:`bastion.cli._app`.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta
from typing import Annotated

import typer

from bastion.core import UserError
from bastion.stores import Pruned, Stores, prune_runs, prune_sessions

from ._common import EXIT_USAGE, console, error
from ._runs import _PLAIN, _STORE, _with_store  # pyright: ignore[reportPrivateUsage]

__all__ = ["parse_age", "prune"]

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86_400, "w": 604_800}
_AGE = re.compile(r"^(\d+)([smhdw])$")


def parse_age(text: str) -> timedelta:
    """``"30d"`` → 30 days (units: s, m, h, d, w).

    Raises:
        UserError: Not a number followed by one unit.
    """
    match = _AGE.match(text.strip())
    if match is None:
        raise UserError(f"--older-than takes a number and a unit (s, m, h, d, w), got {text!r}.")
    return timedelta(seconds=int(match[1]) * _UNITS[match[2]])


def prune(  # noqa: PLR0917 (typer options)
    older_than: Annotated[
        str | None,
        typer.Option(
            "--older-than",
            metavar="AGE",
            help="Delete runs last written longer ago than this (e.g. 30d, 12h).",
            show_default=False,
        ),
    ] = None,
    keep_last: Annotated[
        int | None,
        typer.Option("--keep-last", min=0, help="Keep the newest N runs.", show_default=False),
    ] = None,
    agent: Annotated[
        str | None, typer.Option("--agent", help="Only this agent's runs.", show_default=False)
    ] = None,
    sessions: Annotated[
        bool, typer.Option("--sessions", help="Prune sessions by the same rule too.")
    ] = False,
    plain: Annotated[bool, _PLAIN] = False,
    store: Annotated[str | None, _STORE] = None,
) -> None:
    """Delete finished runs by age or count; running or waiting runs are always kept."""
    try:
        before = datetime.now(UTC) - parse_age(older_than) if older_than is not None else None
    except UserError as exc:
        error(str(exc))
        raise typer.Exit(EXIT_USAGE) from None

    async def work(stores: Stores) -> tuple[Pruned, Pruned | None]:
        runs = await prune_runs(stores.journal, before=before, keep_last=keep_last, agent=agent)
        if not sessions:
            return runs, None
        return runs, await prune_sessions(stores.sessions, before=before, keep_last=keep_last)

    runs, pruned_sessions = _with_store(store, work)
    out = console(plain=plain)
    out.print(f"Deleted {runs.deleted} of {runs.examined} runs.")
    if pruned_sessions is not None:
        out.print(f"Deleted {pruned_sessions.deleted} of {pruned_sessions.examined} sessions.")
