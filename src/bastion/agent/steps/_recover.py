"""Recover: continue a run rebuilt from its journal after its process died.

Called by the loop for ``Agent.resume_stream`` when the journal left the run ``running``
(``_replay.py`` builds the :class:`~bastion.agent._replay.Recovery`). The last step's calls
without a result run now (through ``resume_step``, the approval resumption), except those
whose outcome is unknown: the step suspends on them (status ``awaiting_approval``) with an
``tool.approval.requested`` event each, for a human to decide. A final answer whose output
was not taken yet is finalized.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator

from bastion.agent._replay import Recovery
from bastion.agent._scope import RunScope
from bastion.core import AgentEvent, ToolApprovalRequestedEvent

from ._approvals import resume_step
from ._finalize import finalize

__all__ = ["recover"]


async def recover(scope: RunScope, recovery: Recovery) -> AsyncGenerator[AgentEvent, None]:
    """Finish what the crash left open; the loop then goes on as usual."""
    if recovery.incomplete:
        scope.state.fail(
            "incomplete_tool_call",
            "The model's stream ended inside tool call(s); they were not executed.",
        )
    elif recovery.open_step:
        for pending in recovery.unknown:
            request = pending.request
            assert request is not None  # every unknown call carries its request
            yield ToolApprovalRequestedEvent(
                run_id=scope.run_id,
                tool_call_id=request.tool_call_id,
                tool_name=request.tool_name,
                arguments=pending.call.arguments,
                classification=request.classification,
                reason=request.reason,
            )
        async for event in resume_step(scope, recovery.decisions, recovery.unknown):
            yield event
    elif recovery.final is not None:
        for event in await finalize(scope, recovery.final):
            yield event
