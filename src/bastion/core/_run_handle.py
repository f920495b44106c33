"""``RunHandle``: the one base of every run's stream handle (agents, teams, graphs, fan-outs).

A handle is an async iterator of the run's events and an async context manager; its
:attr:`~RunHandle.result` is there once the events have run out, :meth:`~RunHandle.drain`
runs it to the end without handing events out, :meth:`~RunHandle.abort` stops it and
:meth:`~RunHandle.aclose` (or leaving ``async with``) stops it cleanly when it is left early.
What differs between runs (how events are made, what an abort can say) is the subclass's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import TYPE_CHECKING, Generic, Self, TypeVar

from ._errors import UserError

if TYPE_CHECKING:
    from types import TracebackType

__all__ = ["RunHandle"]

EventT_co = TypeVar("EventT_co", covariant=True)
ResultT_co = TypeVar("ResultT_co", covariant=True)


class RunHandle(ABC, Generic[EventT_co, ResultT_co]):
    """The events of one run as they happen, then its result.

    Example::

        async with agent.stream("What changed?") as run:   # or team.stream, graph.stream, …
            async for event in run:
                print(event.type)
        print(run.result)
    """

    __slots__ = ("_result",)
    _what = "Run"
    """How the run is named in errors (``Run``, ``Graph execution``, ``Fan-out``)."""

    def __init__(self) -> None:
        self._result: ResultT_co | None = None

    @property
    @abstractmethod
    def run_id(self) -> str:
        """Id of the run."""

    @property
    def done(self) -> bool:
        """True once the run has ended (its result is there)."""
        return self._result is not None

    @property
    def result(self) -> ResultT_co:
        """The run's result, once its events have run out.

        Raises:
            UserError: The run has not ended yet.
        """
        result = self._result
        if result is None:
            raise UserError(
                f"{self._what} {self.run_id} has not ended yet: iterate the stream to its end "
                "first."
            )
        return result

    def __aiter__(self) -> Self:
        return self

    @abstractmethod
    async def __anext__(self) -> EventT_co:
        """The run's next event (``StopAsyncIteration`` after the last)."""

    async def drain(self) -> ResultT_co:
        """Run to the end without handing events out; return the result."""
        async for _ in self:
            pass
        return self.result

    @abstractmethod
    def abort(self) -> None:
        """Stop the run; it still ends (and has a result) the way its kind of run says."""

    @abstractmethod
    async def aclose(self) -> None:
        """Stop iterating; a run not yet ended is stopped first, so it ends cleanly."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        await self.aclose()
