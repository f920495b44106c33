"""``Suspension``: a session turn waiting for human decisions, and the decisions so far.

Owned by :class:`~bastion.sessions.Session`. The turn's run suspended with status
``awaiting_approval`` (a call needing approval, or a governance interrupt); once every
pending call and interrupt is decided, the session resumes the run with the
:class:`~bastion.tools.Directive` built here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import asdict
from typing import TYPE_CHECKING, Any, cast

from bastion.core import UserError, json_object
from bastion.governance import DenyDecision, InterruptDecision
from bastion.tools import ApprovalDecision, ApprovalRequest, Directive, InterruptResolution

if TYPE_CHECKING:
    from bastion.agent import RunState
    from bastion.core import JsonObject
    from bastion.governance import SuspendedInterrupt

    from ._events import PendingInterrupt

__all__ = ["Suspension"]


class Suspension:
    """The suspended run of a turn and the decisions gathered for it."""

    def __init__(self, state: RunState) -> None:
        self.state = state
        self._approvals: dict[str, ApprovalDecision] = {}
        self._resolutions: dict[str, InterruptResolution] = {}

    def pending_approvals(self) -> list[ApprovalRequest]:
        """Calls not decided yet, in call order (calls an interrupt holds excepted)."""
        state = self.state
        held = {i for item in state.interrupts for i in item.tool_call_ids}
        return [
            p.request
            or ApprovalRequest(
                tool_call_id=p.call.id, tool_name=p.call.name, arguments={}, step=p.step
            )
            for p in state.pending_approvals
            if p.call.id not in held and p.call.id not in self._approvals
        ]

    def pending_interrupts(self) -> list[PendingInterrupt]:
        """Governance interrupts not decided yet (``SuspendedInterrupt.to_dict()`` form)."""
        return [cast("PendingInterrupt", i.to_dict()) for i in self._open_interrupts()]

    def _open_interrupts(self) -> list[SuspendedInterrupt]:
        """Governance interrupts not decided yet."""
        return [i for i in self.state.interrupts if i.id not in self._resolutions]

    def add(self, directive: Directive, session_id: str) -> None:
        """Take the directive's decisions.

        Raises:
            UserError: A decision names a call or interrupt that is not pending.
        """
        calls = [r.tool_call_id for r in self.pending_approvals()]
        _check_pending("Call", [d.tool_call_id for d in directive.approvals], calls, session_id)
        interrupts = [i.id for i in self._open_interrupts()]
        decided = [r.interrupt_id for r in directive.interrupts]
        _check_pending("Interrupt", decided, interrupts, session_id)
        self._approvals.update((d.tool_call_id, d) for d in directive.approvals)
        self._resolutions.update((r.interrupt_id, r) for r in directive.interrupts)

    @staticmethod
    def payload(directive: Directive) -> JsonObject:
        """A directive as the JSON payload of a ``decided`` entry (what :meth:`restore` reads)."""
        return {
            "approvals": [asdict(d) for d in directive.approvals],
            "interrupts": [
                {"interrupt_id": r.interrupt_id, "decision": _decision_json(r.decision)}
                for r in directive.interrupts
            ],
        }

    def restore(self, payload: Mapping[str, Any]) -> None:
        """Take again the decisions of a stored ``decided`` entry (a reopened session)."""
        self._approvals.update(
            (str(d["tool_call_id"]), ApprovalDecision(**d)) for d in payload.get("approvals", ())
        )
        self._resolutions.update(
            (
                str(r["interrupt_id"]),
                InterruptResolution(interrupt_id=str(r["interrupt_id"]), decision=r["decision"]),
            )
            for r in payload.get("interrupts", ())
        )

    def decided(self) -> bool:
        """True once every pending call and interrupt has a decision."""
        return not self.pending_approvals() and not self._open_interrupts()

    def deny_rest(self, reason: str, *, interrupts: bool) -> None:
        """Deny the calls still undecided, and with ``interrupts`` the interrupts too.

        A steering message denies calls only: a budget's interrupt is a human's call, and
        denying it would fail the run. An abort denies everything.
        """
        for request in self.pending_approvals():
            self._approvals[request.tool_call_id] = ApprovalDecision(
                tool_call_id=request.tool_call_id, granted=False, reason=reason
            )
        if not interrupts:
            return
        for item in self._open_interrupts():
            key = item.id
            self._resolutions[key] = InterruptResolution(
                interrupt_id=key, decision=DenyDecision(reason=reason)
            )

    def directive(self) -> Directive:
        """The decisions, to resume the run with."""
        return Directive(
            approvals=list(self._approvals.values()), interrupts=list(self._resolutions.values())
        )

    def record(self) -> JsonObject:
        """The decisions as the JSON payload of the session's ``resumed`` entry."""
        return {
            "approvals": [asdict(d) for d in self._approvals.values()],
            "interrupts": list(self._resolutions),
        }


def _check_pending(what: str, decided: list[str], pending: list[str], session_id: str) -> None:
    """Refuse a decision on a call (or interrupt) that is not pending.

    Raises:
        UserError: One of ``decided`` is not in ``pending``.
    """
    for key in decided:
        if key not in pending:
            raise UserError(
                f"{what} {key!r} is not pending in session {session_id!r}; pending: {pending}."
            )


def _decision_json(decision: InterruptDecision | Mapping[str, object]) -> JsonObject:
    """A governance decision in the JSON form ``InterruptResolution`` also accepts."""
    if isinstance(decision, Mapping):
        return json_object(dict(decision), "an interrupt decision")
    return asdict(decision)
