"""``Graph.resume``, ``Graph.history``, ``Graph.fork``: the durable side of a graph.

A mixin of :class:`~bastion.graph.Graph`, kept apart from the definition and scheduling
code. ``resume`` works with any :class:`Checkpointer`; ``history`` and ``fork`` need one that
keeps a history (:class:`~bastion.graph.StoreCheckpointer`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, cast

from bastion.core import UserError

from ._result import GraphResult
from ._resume import prepare_resume
from ._store_checkpointer import StoreCheckpointer

if TYPE_CHECKING:
    from bastion.governance import Governor
    from bastion.tools import Directive

    from ._checkpoint import Checkpointer
    from ._graph import Graph
    from ._run import GraphStream
    from ._store_records import CheckpointRecord

__all__ = ["Durable"]


def _checkpointer(graph: Graph, given: Checkpointer | None) -> Checkpointer:
    checkpointer = given if given is not None else graph.checkpointer
    if checkpointer is None:
        raise UserError(
            f"Graph {graph.key!r} has no checkpointer, so it keeps no executions: pass "
            "checkpointer=StoreCheckpointer('sqlite:///graph.db') to Graph(...)."
        )
    return checkpointer


def _store(graph: Graph, given: Checkpointer | None) -> StoreCheckpointer:
    checkpointer = _checkpointer(graph, given)
    if not isinstance(checkpointer, StoreCheckpointer):
        raise UserError(f"{type(checkpointer).__name__} keeps no history; use a StoreCheckpointer.")
    return checkpointer


@dataclass(frozen=True, slots=True)
class _Prepared:
    """A saved execution ready to run again: its input, governor and checkpointer."""

    input: object
    governor: Governor
    checkpointer: Checkpointer


async def _prepare(
    graph: Graph,
    execution_id: str,
    directive: Directive | None,
    governor: Governor | None,
    checkpointer: Checkpointer | None,
) -> _Prepared | GraphResult:
    """What ``resume`` and ``resume_stream`` run, or the recorded result of a completed one."""
    saved_in = _checkpointer(graph, checkpointer)
    governing = graph._governor(governor)  # pyright: ignore[reportPrivateUsage]
    saved = await prepare_resume(graph, execution_id, directive, saved_in, governing)
    if isinstance(saved, GraphResult):
        return saved
    return _Prepared(saved.input, governing, saved_in)


class Durable:
    """Resume, history and fork (mixed into :class:`~bastion.graph.Graph`)."""

    __slots__ = ()

    async def resume(
        self,
        execution_id: str,
        directive: Directive | None = None,
        *,
        governor: Governor | None = None,
        checkpointer: Checkpointer | None = None,
    ) -> GraphResult:
        """Continue a saved execution: only what had not finished runs.

        Works in any process with the same store, on a fresh graph instance. A completed
        execution returns its recorded result; a suspended one needs the decisions on its
        pending interrupts (``Directive(interrupts=[InterruptResolution(...)])``).

        Raises:
            UserError: No such execution, a suspended one without decisions, a decision on
                an interrupt that is not pending (nothing was written or run).
            CheckpointConflict: Another process resumed it first (nothing was run here).
        """
        graph = cast("Graph", self)
        prepared = await _prepare(graph, execution_id, directive, governor, checkpointer)
        if isinstance(prepared, GraphResult):
            return prepared
        return await graph.run(
            prepared.input,
            execution_id=execution_id,
            governor=prepared.governor,
            checkpointer=prepared.checkpointer,
        )

    async def resume_stream(
        self,
        execution_id: str,
        directive: Directive | None = None,
        *,
        governor: Governor | None = None,
        checkpointer: Checkpointer | None = None,
    ) -> GraphStream | GraphResult:
        """Like :meth:`resume`, streaming the signals of what runs.

        Everything that can refuse the resume (an unknown execution, missing decisions, a
        racing resume) is checked and raised here, before the stream exists.

        Returns:
            The stream of the resumed execution, or the recorded result of a completed one.
        """
        graph = cast("Graph", self)
        prepared = await _prepare(graph, execution_id, directive, governor, checkpointer)
        if isinstance(prepared, GraphResult):
            return prepared
        return graph.stream(
            prepared.input,
            execution_id=execution_id,
            governor=prepared.governor,
            checkpointer=prepared.checkpointer,
        )

    async def history(
        self, execution_id: str, *, checkpointer: Checkpointer | None = None
    ) -> list[CheckpointRecord]:
        """The execution's checkpoints, oldest first (one per round).

        Raises:
            UserError: No such execution, or a checkpointer that keeps no history.
        """
        return await _store(cast("Graph", self), checkpointer).history(execution_id)

    async def fork(
        self,
        execution_id: str,
        *,
        version: int | None = None,
        edits: Mapping[str, object] | None = None,
        checkpointer: Checkpointer | None = None,
    ) -> str:
        """Start a new execution from a checkpoint, with edited node outputs.

        Nothing runs yet: ``await graph.resume(new_id)`` runs what is left. See
        :func:`bastion.graph.fork_execution`.

        Returns:
            The new execution's id.
        """
        store = _store(cast("Graph", self), checkpointer)
        return await store.fork(execution_id, version=version, edits=edits)
