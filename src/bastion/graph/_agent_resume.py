"""Agent nodes across a suspension: what is saved when one waits, and how it resumes.

Called by ``NodeContext.run_agent``. When an agent node's run suspends (a tool call waits
for approval, a budget interrupt), its ``RunState`` is handed to a checkpointer that keeps
suspended agents (:class:`~bastion.graph.StoreCheckpointer`), which writes it with the
execution's ``graph_suspended`` entry. When the execution is resumed with a directive, the
node runs again and, instead of starting a new agent run, continues the saved one with the
decisions naming its calls and interrupts: an approved call runs once, nothing the agent
had done is done again.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

from bastion.agent import run_state_from_json, run_state_to_json
from bastion.tools import ApprovalDecision, Directive, InterruptResolution

if TYPE_CHECKING:
    from collections.abc import Mapping

    from bastion.agent import RunState
    from bastion.core import JsonObject, JsonValue
    from bastion.tools import Directive

    from ._directive_json import DirectiveJson
    from ._execution import Execution

__all__ = ["KeepsAgents", "agent_pending", "directive_for", "resumed_agent", "suspend_agent"]


@runtime_checkable
class KeepsAgents(Protocol):
    """A checkpointer that keeps the runs of suspended agent nodes."""

    def suspend_agent(
        self, execution_id: str, node: str, state: str, pending: list[JsonObject]
    ) -> None:
        """Keep ``state`` (``run_state_to_json``) of agent node ``node`` (``key@round``)."""
        ...

    def resumed_agent(
        self, execution_id: str, node: str
    ) -> tuple[str, DirectiveJson | None] | None:
        """The saved state and the resume directive (JSON) of ``node``, once; or ``None``."""
        ...


def agent_pending(node: str, state: RunState) -> list[JsonObject]:
    """What a suspended agent node waits for, as ``graph_suspended`` lists it."""
    key = node.split("@", maxsplit=1)[0]
    items: list[JsonObject] = []
    for pending in state.pending_approvals:
        request = pending.request
        items.append(
            {
                "id": pending.call.id,
                "node": key,
                "kind": "approval",
                "action": f"tool:{pending.call.name}",
                "reason": (request.reason if request is not None else None)
                or f"{pending.call.name} needs approval",
                "payload": {"tool": pending.call.name, "arguments": pending.call.arguments},
            }
        )
    for suspended in state.interrupts:
        interrupt = suspended.interrupt
        items.append(
            {
                "id": interrupt.id,
                "node": key,
                "kind": "interrupt",
                "action": interrupt.action,
                "reason": interrupt.reason,
                "payload": interrupt.to_dict(),
            }
        )
    return items


def directive_for(state: RunState, decisions: DirectiveJson | None) -> Directive:
    """The part of a graph directive (JSON) that decides this agent run's calls."""
    calls = {p.call.id for p in state.pending_approvals}
    interrupts = {s.interrupt.id for s in state.interrupts}
    approvals = decisions["approvals"] if decisions is not None else ()
    resolutions = decisions["interrupts"] if decisions is not None else ()
    return Directive(
        approvals=[
            ApprovalDecision(
                tool_call_id=str(a["tool_call_id"]),
                granted=bool(a["granted"]),
                reason=a.get("reason"),
                arguments=_arguments(a.get("arguments")),
                result=a.get("result"),
                digest=a.get("digest"),
            )
            for a in approvals
            if a["tool_call_id"] in calls
        ],
        interrupts=[
            InterruptResolution(interrupt_id=str(r["interrupt_id"]), decision=r["decision"])
            for r in resolutions
            if r["interrupt_id"] in interrupts
        ],
    )


def resumed_agent(execution: Execution, node_id: str) -> tuple[RunState, Directive] | None:
    """The saved run of this agent node and its decisions, when the execution resumes it."""
    checkpointer = execution.run.checkpointer
    if not isinstance(checkpointer, KeepsAgents):
        return None
    saved = checkpointer.resumed_agent(execution.execution_id, node_id.rpartition("/")[2])
    if saved is None:
        return None
    state = run_state_from_json(saved[0])
    return state, directive_for(state, saved[1])


def suspend_agent(execution: Execution, node_id: str, state: RunState) -> None:
    """Hand a suspended agent node's run to the checkpointer (when it keeps them)."""
    checkpointer = execution.run.checkpointer
    if isinstance(checkpointer, KeepsAgents):
        node = node_id.rpartition("/")[2]
        checkpointer.suspend_agent(
            execution.execution_id, node, run_state_to_json(state), agent_pending(node, state)
        )


def _arguments(given: Mapping[str, JsonValue] | None) -> dict[str, object] | None:
    """A decided call's edited arguments, as ``ApprovalDecision`` holds them."""
    return None if given is None else dict[str, object](given.items())
