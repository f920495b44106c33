"""``Graph.resume``: continue a saved execution, in this process or another one.

Called by :meth:`Graph.resume` / :meth:`Graph.resume_stream`. Loads the checkpoint, puts the
governor back as it was checkpointed (counters, pending interrupts), applies the human's
decisions, takes the execution over (a store checkpointer writes ``graph_resumed`` at the
version it loaded: of two racing resumes one goes on, the other gets
:class:`CheckpointConflict` before anything runs) and runs it again on its saved input;
the scheduler skips every node whose result was saved.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from bastion.core import UserError

from ._result import GraphResult

if TYPE_CHECKING:
    from bastion.governance import Governor
    from bastion.tools import Directive

    from ._checkpoint import Checkpoint, Checkpointer
    from ._graph import Graph

__all__ = ["prepare_resume"]


@runtime_checkable
class _Claims(Protocol):
    def check_claim(self, execution_id: str, directive: Mapping[str, Any] | None) -> None: ...

    async def claim(self, execution_id: str, directive: Mapping[str, Any] | None) -> None: ...


def _directive_json(directive: Directive | None) -> dict[str, Any] | None:
    if directive is None:
        return None
    from pydantic_core import to_jsonable_python

    return {
        "interrupts": [
            {"interrupt_id": r.interrupt_id, "decision": to_jsonable_python(r.decision)}
            for r in directive.interrupts
        ]
    }


async def _decide(governor: Governor, saved: Checkpoint, directive: Directive | None) -> None:
    counters = saved.counters
    pending: set[str] = {i.id for i in counters.pending} if counters is not None else set()
    if saved.status == "suspended" and (directive is None or not directive.interrupts):
        shown = ", ".join(sorted(pending)) or "none recorded"
        raise UserError(
            f"Execution {saved.execution_id!r} is suspended, waiting for a decision on: "
            f"{shown}. Resume it with Directive(interrupts=[InterruptResolution("
            "interrupt_id=..., decision=...)]) (see 'bastion graph show')."
        )
    if directive is None:
        return
    if directive.approvals or directive.inputs:
        raise UserError(
            "A graph execution is resumed with Directive(interrupts=[...]); approvals and "
            "inputs decide an agent run's calls (resume that run with agent.resume)."
        )
    for resolution in directive.interrupts:
        if resolution.interrupt_id not in pending:
            shown = ", ".join(sorted(pending)) or "none"
            raise UserError(
                f"Execution {saved.execution_id!r} has no pending interrupt "
                f"{resolution.interrupt_id!r}. Pending: {shown}."
            )
    for resolution in directive.interrupts:
        await governor.decide(resolution.interrupt_id, resolution.decision)


async def prepare_resume(
    graph: Graph,
    execution_id: str,
    directive: Directive | None,
    checkpointer: Checkpointer,
    governor: Governor,
) -> Checkpoint | GraphResult:
    """Load, restore, decide and claim; the result itself when the execution had ended.

    Raises:
        UserError: No such execution, another graph's, a suspended one without decisions,
            or a decision on an interrupt that is not pending (nothing written).
        CheckpointConflict: Another process resumed it first.
    """
    saved = await checkpointer.load(execution_id)
    if saved is None:
        raise UserError(
            f"No graph execution {execution_id!r} in {checkpointer!r}: start it with "
            "graph.run(input, execution_id=...) first."
        )
    if saved.graph != graph.key:
        raise UserError(
            f"Execution {execution_id!r} is of graph {saved.graph!r}, not {graph.key!r}."
        )
    claims = checkpointer if isinstance(checkpointer, _Claims) else None
    decisions = _directive_json(directive)
    if claims is not None:
        claims.check_claim(execution_id, decisions)
    if saved.status == "completed":
        return GraphResult(
            graph=graph.key,
            graph_id=f"{graph.key}#{execution_id}",
            execution_id=execution_id,
            status="completed",
            output=saved.output,
            rounds=saved.round + 1,
        )
    if saved.counters is not None:
        await governor.restore(saved.counters)
    await _decide(governor, saved, directive)
    if claims is not None:
        await claims.claim(execution_id, decisions)
    return saved
