"""What the Temporal commands share: ``--temporal``, ``--task-queue``, the connection.

Also Temporal's refusals as usage errors, and the exit after a client.

``temporalio`` is imported only when a command connects.
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Awaitable, Callable, Coroutine
from typing import TYPE_CHECKING, Annotated, TypeVar

import typer

from bastion.core import UserError

from ._common import EXIT_INTERRUPTED, EXIT_USAGE, error

if TYPE_CHECKING:
    from temporalio.client import Client

__all__ = [
    "TEMPORAL_ENV",
    "TEMPORAL_OPTION",
    "TaskQueue",
    "connect",
    "exit_after_temporal",
    "refusing",
    "run_client",
]

_T = TypeVar("_T")

TEMPORAL_ENV = "BASTION_TEMPORAL"
"""The variable that sends ``run`` and ``runs resume`` to a Temporal server, as ``--temporal``."""

TEMPORAL_OPTION = typer.Option(
    "--temporal",
    metavar="ADDRESS",
    envvar=TEMPORAL_ENV,
    help="Run on the Temporal server at ADDRESS (host:port) instead of in this process; "
    "'bastion worker' serves the agent (default: $BASTION_TEMPORAL, else in-process).",
    show_default=False,
)
TaskQueue = Annotated[
    str | None,
    typer.Option(
        "--task-queue",
        metavar="QUEUE",
        help="The Temporal task queue (default: bastion.<agent name>).",
        show_default=False,
    ),
]


_CONNECTED: list[str] = []
"""The addresses this process connected to (see :func:`exit_after_temporal`)."""


def exit_after_temporal(code: int) -> None:
    """End the process at once with ``code`` if it used a Temporal client; else return.

    Temporal's client keeps native threads that may touch the interpreter while it shuts
    down, which aborts it (temporalio/sdk-python#300), and a worker's evicted workflows
    would be closed then too. Output is flushed first; nothing else is left to do.
    """
    if not _CONNECTED:
        return
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(code)


async def connect(address: str) -> Client:
    from temporalio.client import Client

    _CONNECTED.append(address)
    try:
        return await Client.connect(address)
    except RuntimeError as exc:
        raise UserError(f"Cannot reach the Temporal server at {address!r}: {exc}") from None


def run_client(go: Callable[[], Coroutine[object, None, _T]]) -> _T | int:
    """``asyncio.run(go())``; a refusal or an interrupt is printed, its exit code returned."""
    try:
        return asyncio.run(go())
    except UserError as exc:
        error(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        error("interrupted (the workflow goes on; 'bastion worker' serves it)")
        return EXIT_INTERRUPTED


async def refusing(awaitable: Awaitable[_T]) -> _T:
    """``awaitable``'s value; Temporal's refusals become a :class:`UserError`."""
    from temporalio.service import RPCError

    try:
        return await awaitable
    except RPCError as exc:
        raise UserError(f"Temporal refused: {exc.message}") from None
