"""Dispatch tools: bind a step's tool calls to the executor, and record their results.

The loop hooks (``before_tool_exec`` / ``after_tool_exec``) and the ``on_tool_call``
observer are plugged into the executor only when overridden.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, Mapping, Sequence

from bastion.agent._dataflow import note_outcome
from bastion.agent._hooks import AgentHooks, LoopHooks, maybe_await
from bastion.agent._result import ToolCallRecord
from bastion.agent._scope import RunScope
from bastion.agent._state import RunState
from bastion.core import (
    AgentEvent,
    Message,
    ToolCall,
    ToolMessage,
)
from bastion.tools import (
    ApprovalDecision,
    ApprovalRequest,
    SkipTool,
    Tool,
    ToolBatch,
    ToolOutcome,
    end_event,
)

__all__ = [
    "ABORTED_RESULT",
    "pump_batch",
    "record_outcome",
    "record_outcomes",
    "start_batch",
    "unreported_events",
]

ABORTED_RESULT = "Tool call aborted before it finished: the run was aborted."


class _HookBridge:
    """Adapts the agent's hooks to the executor's interception points."""

    __slots__ = ("_scope",)

    def __init__(self, scope: RunScope) -> None:
        self._scope = scope

    async def before(
        self, tool: Tool, call: ToolCall, args: Mapping[str, object]
    ) -> SkipTool | None:
        scope = self._scope
        config = scope.config
        flags = config.hook_flags
        ctx = scope.ctx
        journal = scope.journal
        if journal is not None:  # the ledger: journaled before the tool runs
            await journal.tool_call_started(tool, call, args, scope.state.step)
        if flags.on_tool_call:
            hooks: AgentHooks = config.hooks  # type: ignore[assignment]  # flag implies hooks
            await maybe_await(hooks.on_tool_call(ctx, tool.name, args))
        if flags.before_tool_exec:
            loop: LoopHooks = config.loop_hooks  # type: ignore[assignment]
            return await maybe_await(loop.before_tool_exec(ctx, tool.name, args))
        return None

    async def before_approval(self, request: ApprovalRequest) -> None:
        journal = self._scope.journal
        if journal is not None:  # what the run did so far is durable before a human waits
            await journal.flush()

    async def after(self, tool: Tool, call: ToolCall, content: str) -> str:
        config = self._scope.config
        if not config.hook_flags.after_tool_exec:
            return content
        loop: LoopHooks = config.loop_hooks  # type: ignore[assignment]
        replaced = await maybe_await(loop.after_tool_exec(self._scope.ctx, tool.name, content))
        return content if replaced is None else replaced


def start_batch(
    scope: RunScope,
    calls: Sequence[ToolCall],
    decisions: Mapping[str, ApprovalDecision] | None = None,
) -> ToolBatch:
    """Validate the calls of a step and bind them to the executor; relay it with ``pump_batch``.

    ``decisions`` are human decisions on calls that waited for approval (a resumed run).
    """
    config = scope.config
    hooks = (
        _HookBridge(scope) if config.hook_flags.any_tool_hook or scope.journal is not None else None
    )
    batch = config.executor.batch(
        calls,
        scope.ctx,
        hooks=hooks,
        decisions=decisions,
        tools=scope.tools.by_name,  # the tools the model was shown this step
    )
    if scope.withheld_tools:  # left out of this step by prepare_step: not run
        for call in calls:
            if call.name in scope.withheld_tools:
                batch.refuse(call.id, "capability_blocked", _withheld(call.name))
    allowance = scope.config.allowance
    if allowance is not None:
        _over_slice(scope, batch, calls, allowance.calls_left(scope.state))
    blocked = scope.tools.blocked
    if blocked:  # beyond the run's capability (a read-only sub-agent's writers)
        for call in calls:
            if call.name in blocked:
                batch.refuse(call.id, "capability_blocked", _blocked(call.name))
    return batch


def _over_slice(
    scope: RunScope, batch: ToolBatch, calls: Sequence[ToolCall], left: int | None
) -> None:
    """Refuse the calls beyond the tool calls a sub-agent's budget slice still allows."""
    if left is None or len(calls) <= left:
        return
    allowed = scope.config.allowance.tool_calls if scope.config.allowance else None
    for call in calls[left:]:
        batch.refuse(
            call.id,
            "rate_limited",
            f"Not run: this agent's budget allows {allowed} tool calls, and they are used up.",
        )


def _blocked(name: str) -> str:
    return (
        f"Tool {name!r} is not available: this agent runs read-only (capability "
        "'read_only'), so it was not run. Use the tools offered to you, or answer."
    )


def _withheld(name: str) -> str:
    return (
        f"Tool {name!r} is not available in this step (it was not offered to you), so it "
        "was not run. Use one of the tools offered in this step, or answer."
    )


async def pump_batch(scope: RunScope, batch: ToolBatch) -> AsyncGenerator[AgentEvent, None]:
    """Relay a tool batch's events to the loop: the one observer of every batch.

    The governance signals raised while a call was admitted or ran go out before the tool
    event that follows them; each tool event is journaled as it leaves, numbered (whether
    or not the consumer asks for more); an abort is checked after each event. Closing the
    relay cancels the calls still running. Close it with ``aclosing``.
    """
    governance = scope.governance
    journal = scope.journal
    check_abort = scope.check_abort
    events = batch.events()
    try:
        async for event in events:
            if governance is not None and governance.signals:
                for signal in governance.drain(scope.run_id):
                    yield signal
            if journal is None:
                yield event
            else:
                try:
                    yield event
                finally:  # numbered by now: the loop numbers an event as it yields it
                    journal.tool_event(event, batch, scope.state.step)
            check_abort()
    except BaseException:
        await events.aclose()  # cancels calls still running
        raise


def record_outcomes(scope: RunScope, batch: ToolBatch, calls: Sequence[ToolCall]) -> None:
    """Append one tool message per call and keep the calls whose end events are owed.

    Calls that did not finish (the run was aborted) get an error result, so the
    conversation never holds a tool call without its result. Calls waiting for a human
    decision get none yet: the run suspends (see ``_approvals.py``).
    """
    scope.unreported = batch.unreported()
    state = scope.state
    # A suspended step holds its results until the pending calls are decided.
    target = state.messages if state.suspended is None else state.suspended.results
    pending = {request.tool_call_id for request in batch.pending}
    tools = scope.tools.by_name
    for call, outcome in zip(calls, batch.outcomes, strict=True):
        if call.id not in pending:
            record_outcome(state, tools, call, outcome, target)
    scope.ctx.usage = state.usage  # a sub-agent's usage may have joined it


def record_outcome(
    state: RunState,
    tools: Mapping[str, Tool],
    call: ToolCall,
    outcome: ToolOutcome | None,
    target: list[Message] | list[ToolMessage],
) -> None:
    """Append one call's tool message to ``target`` and its record to the run.

    ``outcome`` is ``None`` for a call that did not finish (an aborted run). Also used to
    replay a journaled result (``_replay.py``).
    """
    tool = tools.get(call.name)
    if outcome is None:
        content, is_error, kind, duration = ABORTED_RESULT, True, "aborted", 0.0
    else:
        content, is_error = outcome.content, outcome.is_error
        kind, duration = outcome.error_kind, outcome.duration
        if outcome.untrusted:  # later requests carry the inbound preamble
            state.untrusted_seen = True
        note_outcome(state, outcome)  # the provenance ledger (data-flow policy)
        if outcome.promote_tools:
            _promote(state.promoted_tools, tools, outcome.promote_tools)
        for model, usage in outcome.spent:  # a sub-agent's calls, a result's summary
            state.add_usage(model, usage)
    target.append(
        ToolMessage(
            tool_call_id=call.id,
            tool_name=call.name,
            content=content,
            is_error=is_error,
            sensitivity=tool.sensitivity if tool is not None else "public",
        )
    )
    state.tool_calls.append(
        ToolCallRecord(
            id=call.id,
            name=call.name,
            arguments=call.arguments if outcome is None else outcome.call.arguments,
            result=content,
            is_error=is_error,
            step=state.step,
            error_kind=kind,
            duration=duration,
        )
    )


def _promote(promoted: list[str], tools: Mapping[str, Tool], names: Sequence[object]) -> None:
    """Add the deferred tools named by a result (``tool_search``) to the run's catalogue.

    Names of unknown or eager tools are ignored: a result can only reveal deferred tools.
    """
    for name in names:
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is not None and tool.defer_loading and name not in promoted:
            promoted.append(tool.name)


def unreported_events(scope: RunScope) -> list[AgentEvent]:
    """End events for the calls of an interrupted batch that never got one, in call order."""
    events: list[AgentEvent] = []
    for call, outcome in scope.unreported:
        aborted = ToolOutcome(
            call=call, content=ABORTED_RESULT, is_error=True, error_kind="aborted"
        )
        events.append(end_event(outcome or aborted, scope.run_id))
    scope.unreported = []
    return events
