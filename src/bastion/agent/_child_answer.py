"""A decision on a parent's call that runs a parked child run, as the answer it runs with.

A child run (``bastion.multi``) that waits on approvals parks its parent's tool call with a
question whose ``source`` is ``agent:<name>``; the parent's approval step turns a plain
approve or deny of that call into the answer the child's call runs again with.
"""

from __future__ import annotations

from collections.abc import Mapping

from bastion.core import UserError
from bastion.tools import ApprovalDecision, ApprovalRequest, InputAnswer

from ._narrow import json_object, json_objects

__all__ = ["CHILD_SOURCE", "DENIED", "decided_child"]

CHILD_SOURCE = "agent:"
DENIED = "Denied by a person."
_SOURCE = CHILD_SOURCE
_DENIED = DENIED


def _check_answer(call_id: str, answer: InputAnswer, context: Mapping[str, object]) -> None:
    """Refuse an answer that decides what the child does not wait for.

    Raises:
        UserError: It names a call or an interrupt the child is not waiting on.
    """
    content = answer.content or {}
    where = f"The answer to call {call_id!r}"
    pending = {str(p.get("tool_call_id")) for p in json_objects(context["pending"], "pending")}
    waiting = {str(i.get("id")) for i in json_objects(context["interrupts"], "interrupts")}
    chosen = json_object(content.get("approvals"), f"{where}: 'approvals'")
    named = set(chosen) | set(json_object(content.get("reasons"), f"{where}: 'reasons'"))
    resolved = {
        str(i.get("interrupt_id"))
        for i in json_objects(content.get("interrupts"), f"{where}: 'interrupts'")
    }
    if answer.action == "accept" and waiting - resolved:
        raise UserError(
            f"The answer to call {call_id!r} leaves its sub-agent's interrupt(s) "
            f"{sorted(waiting - resolved)} undecided: resolve each in 'interrupts'."
        )
    unknown = sorted((named - pending) | (resolved - waiting))
    if unknown:
        raise UserError(
            f"The answer to call {call_id!r} decides {unknown}, which its sub-agent is not "
            f"waiting on; it waits on call(s) {sorted(pending)} and interrupt(s) "
            f"{sorted(waiting)}."
        )


def decided_child(request: ApprovalRequest | None, decision: ApprovalDecision) -> ApprovalDecision:
    """A plain decision on a parked child's call, as the answer its call runs again with.

    Approving grants everything the child waits for; denying denies it (the call still
    runs: the child goes on and its model reads the denial). Other decisions stay as
    they are.

    Raises:
        UserError: A plain approval of a child that also waits on governance interrupts
            (they need a resolution each, in an answer).
    """
    question = request.input if request is not None else None
    if question is None or not question.source.startswith(_SOURCE):
        return decision
    if "run_id" not in question.context or decision.result is not None:
        return decision
    interrupts = json_objects(question.context.get("interrupts"), "interrupts")
    if decision.answer is not None:
        _check_answer(decision.tool_call_id, decision.answer, question.context)
        return decision
    if decision.granted and interrupts:
        ids = [str(i.get("id")) for i in interrupts]
        raise UserError(
            f"Call {decision.tool_call_id!r} runs {question.source}, which waits on "
            f"interrupt(s) {ids}: answer it with Directive(inputs=[InputAnswer(tool_call_id="
            f"{decision.tool_call_id!r}, content={{'interrupts': [...]}})])."
        )
    answer = InputAnswer(
        tool_call_id=decision.tool_call_id,
        action="accept" if decision.granted else "decline",
        content=None if decision.granted else {"reason": decision.reason or _DENIED},
        request=question,
    )
    return ApprovalDecision(
        tool_call_id=decision.tool_call_id, granted=True, answer=answer, digest=decision.digest
    )
