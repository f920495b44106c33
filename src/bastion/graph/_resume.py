"""``Graph.resume``: continue a saved execution, in this process or another one.

Called by :meth:`Graph.resume` / :meth:`Graph.resume_stream`. Loads the checkpoint, puts the
governor back as it was checkpointed (counters, pending interrupts), applies the human's
decisions, takes the execution over (a store checkpointer writes ``graph_resumed`` at the
version it loaded: of two racing resumes one goes on, the other gets
:class:`CheckpointConflict` before anything runs) and runs it again on its saved input;
the scheduler skips every node whose result was saved.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bastion.core import UserError, json_object

from ._result import GraphResult

if TYPE_CHECKING:
    from bastion.governance import Governor
    from bastion.tools import Directive

    from ._checkpoint import Checkpoint, Checkpointer
    from ._directive_json import DirectiveJson
    from ._graph import Graph

__all__ = ["prepare_resume"]


@runtime_checkable
class _Claims(Protocol):
    def check_claim(self, execution_id: str, directive: DirectiveJson | None) -> None: ...

    def pending_ids(self, execution_id: str) -> set[str]: ...

    async def claim(self, execution_id: str, directive: DirectiveJson | None) -> None: ...


def _directive_json(directive: Directive | None) -> DirectiveJson | None:
    if directive is None:
        return None
    from pydantic_core import to_jsonable_python

    return {
        "approvals": [
            {
                "tool_call_id": a.tool_call_id,
                "granted": a.granted,
                "reason": a.reason,
                "arguments": None if a.arguments is None else json_object(a.arguments, "arguments"),
                "result": a.result,
                "digest": a.digest,
            }
            for a in directive.approvals
        ],
        "interrupts": [
            {"interrupt_id": r.interrupt_id, "decision": to_jsonable_python(r.decision)}
            for r in directive.interrupts
        ],
    }


async def _decide(
    governor: Governor, saved: Checkpoint, directive: Directive | None, waits: set[str]
) -> None:
    """Check the decisions against what the execution waits for; give the governor its own.

    ``waits`` holds the ids the last suspension recorded (governor interrupts, and the
    calls and interrupts of suspended agent nodes, which their runs decide themselves).
    """
    counters = saved.counters
    governed: set[str] = {i.id for i in counters.pending} if counters is not None else set()
    pending = governed | waits
    if saved.status == "suspended" and (
        directive is None or not (directive.interrupts or directive.approvals)
    ):
        shown = ", ".join(sorted(pending)) or "none recorded"
        raise UserError(
            f"Execution {saved.execution_id!r} is suspended, waiting for a decision on: "
            f"{shown}. Resume it with Directive(interrupts=[InterruptResolution(...)], "
            "approvals=[ApprovalDecision(...)]) (see 'bastion graph show')."
        )
    if directive is None:
        return
    if directive.inputs:
        raise UserError("A graph execution takes no Directive.inputs; answer with interrupts.")
    named = [r.interrupt_id for r in directive.interrupts]
    named += [a.tool_call_id for a in directive.approvals]
    for item in named:
        if item not in pending:
            shown = ", ".join(sorted(pending)) or "none"
            raise UserError(
                f"Execution {saved.execution_id!r} has no pending interrupt or call "
                f"{item!r}. Pending: {shown}."
            )
    for resolution in directive.interrupts:
        if resolution.interrupt_id in governed:
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
    waits = claims.pending_ids(execution_id) if claims is not None else set[str]()
    await _decide(governor, saved, directive, waits)
    if claims is not None:
        await claims.claim(execution_id, decisions)
    return saved
