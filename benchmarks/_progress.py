"""A bar of the harness's interleaved rounds, on stderr when it is a terminal (else nothing)."""

from __future__ import annotations

from collections.abc import Generator
from contextlib import contextmanager

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

__all__ = ["Rounds", "rounds_bar"]


class Rounds:
    """Advance the bar by one sampler's batch of one round."""

    def __init__(self, progress: Progress, rounds: int) -> None:
        self._progress = progress
        self._rounds = rounds
        self._task = progress.add_task("", total=None)

    def start(self, round_: int, name: str, total: int) -> None:
        """A sampler's batch of round ``round_`` (from 0) starts."""
        description = f"round {round_ + 1}/{self._rounds} · {name}"
        self._progress.update(self._task, total=total, description=description, refresh=True)

    def done(self) -> None:
        """The batch ended."""
        self._progress.advance(self._task)
        self._progress.refresh()


@contextmanager
def rounds_bar(rounds: int, console: Console | None = None) -> Generator[Rounds]:
    """A bar of ``rounds`` rounds; drawn (then cleared) only when ``console`` is a terminal."""
    out = console or Console(stderr=True)
    progress = Progress(
        TextColumn("{task.description}"), BarColumn(bar_width=24), MofNCompleteColumn(),
        TimeElapsedColumn(), console=out, transient=True, disable=not out.is_terminal,
    )  # fmt: skip
    with progress:
        yield Rounds(progress, rounds)
