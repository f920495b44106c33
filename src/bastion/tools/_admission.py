"""Admitting the calls of one step: the gate's stages after validation, in call order.

The repair round (stage 2), the governance check (stage 0, run after validation), a
guard's finding, the ``before_tool_call`` hooks (stage 3), the approval requirement (stage
4) and its resolution (stage 5): ``on_approval`` within its timeout, or a *pending* call
the run suspends on. A decision passed in on resume stands in for stages 3 to 5. Yields
``tool.approval.requested`` / ``resolved`` and governance events as it goes.
"""

from __future__ import annotations

import json
from collections.abc import AsyncGenerator, Awaitable, Mapping, Sequence
from dataclasses import dataclass, replace

from bastion.core import (
    AgentEvent,
    Clock,
    GovernanceEvent,
    RunError,
    ToolApprovalRequestedEvent,
    ToolApprovalResolvedEvent,
    UserError,
)

from ._gate import (
    Allow,
    ApprovalDecision,
    ApprovalRequest,
    Ask,
    Deny,
    GuardVerdict,
    Mock,
    Rewrite,
    ToolCallRequest,
    ToolGate,
    ToolGovernor,
)
from ._invoke import DeadlineExceeded, within
from ._outcome import error_outcome
from ._prepared import BatchScope, PreparedCall, approval_request, args_view
from ._schema import ToolArgumentsError
from ._tool import Tool

__all__ = ["Admission", "ApprovalTimeout"]


class ApprovalTimeout(RunError):
    """``on_approval`` did not decide in time and ``timeout_action`` is ``"raise"``."""


@dataclass(frozen=True, slots=True)
class Admission:
    """The gate's stages after validation for the calls of one batch.

    Decides calls in place (their ``outcome``, ``mock`` or ``pending``); what humans
    decided goes to the scope's ``decided``, what waits for one to its ``pending``.

    Attributes:
        gate: The gate.
        clock: Measures the approval timeout.
        scope: What the batch's parts share.
        decisions: Human decisions by call id, passed in on resume.
    """

    gate: ToolGate
    clock: Clock
    scope: BatchScope
    decisions: Mapping[str, ApprovalDecision]

    def needed(self, prepared: Sequence[PreparedCall]) -> bool:
        """Whether any stage may apply to the calls (else :meth:`admit` has nothing to do)."""
        gate = self.gate
        return (
            bool(self.decisions)
            or gate.governor is not None
            or gate.guard is not None
            or self._approval_stages(prepared)
        )

    async def admit(
        self, prepared: Sequence[PreparedCall], *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        """Stages 2 (repair) to 5 of the gate, in call order; yields approval events.

        With ``interactive=False`` nobody is asked: a call needing approval stays pending.
        """
        gate = self.gate
        check_approval = self._approval_stages(prepared)
        guard = gate.guard
        if not check_approval and not self.decisions and gate.governor is None and guard is None:
            return
        for p in prepared:
            if p.invalid is not None:
                await self._repair(p, p.invalid)
            if p.outcome is not None or p.tool is None:
                continue
            if gate.governor is not None and not await self._govern(gate.governor, p, p.tool):
                continue
            decided = self.decisions.get(p.call.id)
            if decided is not None:
                for event in self._apply_decision(p, decided, timed_out=False):
                    yield event
                continue
            if guard is not None:
                verdict = await guard.check(p.tool, p.call, args_view(p), self.scope.ctx)
                if verdict is not None:
                    async for event in self._guarded(p, p.tool, verdict, interactive=interactive):
                        yield event
                    if verdict.decision is not None:
                        continue
            if not check_approval:
                continue
            async for event in self._admit_one(p, p.tool, interactive=interactive):
                yield event

    def _approval_stages(self, prepared: Sequence[PreparedCall]) -> bool:
        """Whether any call may meet hooks, a repair or an approval (stages 2 to 5)."""
        # The governance check (stage 0) does not by itself call for the approval stages.
        return not self.gate.unattended or any(
            p.tool is not None and p.tool.needs_approval is not False for p in prepared
        )

    async def _guarded(
        self, p: PreparedCall, tool: Tool, verdict: GuardVerdict, *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        """Report the guard's finding; apply its refusal, or ask a human."""
        yield GovernanceEvent(
            run_id=self.scope.ctx.run_id, signal=verdict.signal, data=verdict.data
        )
        match verdict.decision:
            case Deny(reason=reason, kind=kind):
                p.outcome = error_outcome(p.call, kind, reason)
            case Ask(reason=reason):
                async for event in self._request_approval(p, tool, reason, interactive=interactive):
                    yield event
            case None:
                pass

    async def _govern(self, governor: ToolGovernor, p: PreparedCall, tool: Tool) -> bool:
        """Stage 0, the governance check; False when it decided the call."""
        decision = await governor.check(tool, p.call, args_view(p), self.scope.ctx)
        match decision:
            case None | Allow():
                return True
            case Deny(reason=reason, kind=kind):
                p.outcome = error_outcome(p.call, kind, reason)
            case Mock(result=result):
                p.mock = result
            case Ask(reason=reason):
                p.pending = approval_request(p, tool, reason, self.scope.ctx.step)
                self.scope.pending.append(p.pending)
            case Rewrite():
                raise UserError("A tool governor cannot rewrite arguments; use a hook.")
        return False

    async def _admit_one(
        self, p: PreparedCall, tool: Tool, *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        gate = self.gate
        decision = None
        if gate.before_tool_call:
            decision = await gate.decide(
                ToolCallRequest(tool=tool, call=p.call, arguments=args_view(p), ctx=self.scope.ctx)
            )
            match decision:
                case Deny(reason=reason, kind=kind):  # approval_denied unless the hook says
                    p.outcome = error_outcome(p.call, kind, reason)
                    return
                case Mock(result=result):
                    p.mock = result
                    return
                case Allow():
                    return
                case Rewrite(arguments=arguments):
                    if not _revalidate(p, tool, arguments):
                        return
                case Ask() | None:
                    pass
        if not isinstance(decision, Ask) and not await gate.needs_approval(tool, args_view(p)):
            return
        reason = decision.reason if isinstance(decision, Ask) else None
        async for event in self._request_approval(p, tool, reason, interactive=interactive):
            yield event

    async def _request_approval(
        self, p: PreparedCall, tool: Tool, reason: str | None, *, interactive: bool
    ) -> AsyncGenerator[AgentEvent, None]:
        """Stage 5: ask ``on_approval``, or leave the call pending (the run suspends)."""
        request = approval_request(p, tool, reason, self.scope.ctx.step)
        on_approval = self.gate.approval.on_approval
        asks = on_approval is not None and interactive
        if asks and self.scope.hooks is not None:  # durable before anyone sees the question
            await self.scope.hooks.before_approval(request)
        yield ToolApprovalRequestedEvent(
            run_id=self.scope.ctx.run_id,
            tool_call_id=p.call.id,
            tool_name=tool.name,
            arguments=p.call.arguments,
            classification=request.classification,
            reason=request.reason,
        )
        if not asks:
            p.pending = request
            self.scope.pending.append(request)
            return
        decided, timed_out = await self._ask(request)
        for event in self._apply_decision(p, decided, timed_out=timed_out):
            yield event

    async def _ask(self, request: ApprovalRequest) -> tuple[ApprovalDecision, bool]:
        """Ask ``on_approval`` within the timeout; the decision, and whether it timed out.

        Raises:
            ApprovalTimeout: No decision in time and ``timeout_action`` is ``"raise"``.
        """
        approval = self.gate.approval
        on_approval = approval.on_approval
        assert on_approval is not None  # checked by the caller

        async def ask() -> bool | ApprovalDecision:
            answer = on_approval(request, self.scope.ctx)
            if isinstance(answer, Awaitable):
                answer = await answer
            return answer

        try:
            answer = await within(self.clock, approval.timeout, ask())
        except DeadlineExceeded:
            if approval.timeout_action == "raise":
                raise ApprovalTimeout(
                    f"No decision on the call to {request.tool_name!r} within {approval.timeout} s."
                ) from None
            granted = approval.timeout_action == "approve"
            reason = None if granted else f"No decision within {approval.timeout} s."
            return ApprovalDecision(
                tool_call_id=request.tool_call_id, granted=granted, reason=reason
            ), True
        if isinstance(answer, ApprovalDecision):
            return replace(answer, tool_call_id=request.tool_call_id), False
        return ApprovalDecision(tool_call_id=request.tool_call_id, granted=bool(answer)), False

    def _apply_decision(
        self, p: PreparedCall, decision: ApprovalDecision, *, timed_out: bool
    ) -> list[AgentEvent]:
        self.scope.decided[p.call.id] = decision
        event = ToolApprovalResolvedEvent(
            run_id=self.scope.ctx.run_id,
            tool_call_id=p.call.id,
            tool_name=p.call.name,
            granted=decision.granted,
            reason=decision.reason,
            timed_out=timed_out,
        )
        if decision.result is not None:  # marked done by a human: the tool does not run
            p.mock = decision.result
        elif not decision.granted:
            reason = decision.reason or "A human denied the call."
            p.outcome = error_outcome(p.call, "approval_denied", f"Denied: {reason}")
        elif decision.arguments is not None and p.tool is not None:
            _revalidate(p, p.tool, decision.arguments)
        return [event]

    async def _repair(self, p: PreparedCall, error: ToolArgumentsError) -> None:
        tool = p.tool
        repair = self.gate.repair
        assert tool is not None  # only marked for known tools
        assert repair is not None  # ... when a repair hook exists
        p.invalid = None
        fixed = repair(p.call, error)
        if isinstance(fixed, Awaitable):
            fixed = await fixed
        if fixed is None:
            return
        arguments = fixed if isinstance(fixed, str) else json.dumps(fixed, separators=(",", ":"))
        call = replace(p.call, arguments=arguments)
        try:
            p.args, p.kwargs = tool.validator.validate(call.arguments)
        except ToolArgumentsError as exc:
            p.outcome = error_outcome(call, "invalid_input", exc.for_model(tool.name))
            return
        p.call, p.outcome = call, None


def _revalidate(p: PreparedCall, tool: Tool, arguments: Mapping[str, object]) -> bool:
    """Give the call new arguments and validate them; False when they are invalid."""
    call = replace(p.call, arguments=json.dumps(arguments, separators=(",", ":")))
    p.call = call
    try:
        p.args, p.kwargs = tool.validator.validate(call.arguments)
    except ToolArgumentsError as exc:
        p.outcome = error_outcome(call, "invalid_input", exc.for_model(tool.name))
        return False
    return True
