"""Approvals bound to the exact call: digests, their checks, and edited calls.

A decision applies to one call as it was when the human was asked: the run, the call id,
the tool and its canonical arguments, hashed into a digest. The digest is set on each
``ApprovalRequest`` when a run suspends (``steps/_approvals.py``, ``_replay.py``), journaled
with each decision (``RunJournal.decided_directive``) and checked again before a decided
call runs: on resume with a directive (``check_bindings``) and on replay of a journaled
decision (``_replay.py``). A call changed in the store in between is refused with
:class:`ApprovalMismatch`; nothing runs.

An approval with edited arguments replaces the call in the transcript (``apply_edits``), so
the model reads the call that actually ran, and a replay applies the same edit.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping
from dataclasses import replace

from bastion.core import AssistantMessage, ToolCall, UserError
from bastion.tools import ApprovalDecision

from ._state import PendingApproval, RunState

__all__ = ["ApprovalMismatch", "apply_edits", "bind", "call_digest", "check_bindings"]


class ApprovalMismatch(UserError):
    """A decision does not match the call it would run; nothing was run.

    The call changed after it was shown to the human (or after the decision was
    journaled), or the decision was already consumed by an earlier resume.
    """


def call_digest(run_id: str, call: ToolCall) -> str:
    """The digest of one call: run, call id, tool name and canonical arguments."""
    try:
        arguments: object = json.loads(call.arguments) if call.arguments.strip() else {}
        canonical = json.dumps(arguments, sort_keys=True, separators=(",", ":"))
    except ValueError:  # malformed arguments: bind to the exact text
        canonical = call.arguments
    document = json.dumps([run_id, call.id, call.name, canonical], separators=(",", ":"))
    return hashlib.sha256(document.encode("utf-8", "surrogatepass")).hexdigest()


def bind(run_id: str, pending: PendingApproval) -> PendingApproval:
    """The pending approval with its request carrying the call's digest."""
    if pending.request is None:
        return pending
    request = replace(pending.request, digest=call_digest(run_id, pending.call))
    return replace(pending, request=request)


def check_bindings(state: RunState, decisions: Mapping[str, ApprovalDecision]) -> None:
    """Refuse to run a decided call that is not the call the human was asked about.

    Raises:
        ApprovalMismatch: A pending call's digest differs from its request's (the stored
            call was changed after the run suspended), or from the decision's own digest.
    """
    for pending in state.pending_approvals:
        decision = decisions.get(pending.call.id)
        if decision is None:
            continue
        actual = call_digest(state.run_id, pending.call)
        expected = [
            ("the request the run suspended with", getattr(pending.request, "digest", None)),
            ("the decision", decision.digest),
        ]
        for what, digest in expected:
            if digest is not None and digest != actual:
                raise ApprovalMismatch(
                    f"Call {pending.call.id!r} of run {state.run_id} ({pending.call.name} "
                    f"{pending.call.arguments}) does not match {what}: it was changed after "
                    "approval was asked, so the approval does not apply and nothing was run. "
                    "Inspect the run ('bastion runs show') and decide on the call as it is."
                )


def apply_edits(state: RunState, decisions: Mapping[str, ApprovalDecision]) -> None:
    """Put approved edited arguments into the transcript, the step and the pending calls.

    The executor runs an edited call with ``json.dumps(arguments, separators=(",", ":"))``;
    the transcript gets the same text, so the model reads what ran.
    """
    edited = {
        call_id: json.dumps(d.arguments, separators=(",", ":"))
        for call_id, d in decisions.items()
        if d.granted and d.result is None and d.arguments is not None
    }
    if not edited:
        return

    def edit(call: ToolCall) -> ToolCall:
        text = edited.get(call.id)
        return call if text is None else replace(call, arguments=text)

    for index, message in enumerate(state.messages):
        if isinstance(message, AssistantMessage) and any(
            c.id in edited for c in message.tool_calls
        ):
            state.messages[index] = replace(
                message, tool_calls=[edit(c) for c in message.tool_calls]
            )
    if state.suspended is not None:
        state.suspended.calls = [edit(c) for c in state.suspended.calls]
    state.pending_approvals = [replace(p, call=edit(p.call)) for p in state.pending_approvals]
