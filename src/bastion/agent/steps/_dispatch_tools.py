"""Dispatch tools: bind a step's tool calls to the executor, and record their results.

The loop hooks (``before_tool_exec`` / ``after_tool_exec``) and the ``on_tool_call``
observer are plugged into the executor only when overridden.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

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
    Usage,
)
from bastion.tools import (
    NESTED_USAGE,
    PROMOTE_TOOLS,
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

    async def before(self, tool: Tool, call: ToolCall, args: Mapping[str, Any]) -> SkipTool | None:
        scope = self._scope
        agent = scope.agent
        flags = agent.hook_flags
        ctx = scope.ctx
        journal = scope.journal
        if journal is not None:  # the ledger: journaled before the tool runs
            await journal.tool_call_started(tool, call, args, scope.state.step)
        if flags.on_tool_call:
            hooks: AgentHooks = agent.hooks  # type: ignore[assignment]  # flag implies hooks
            await maybe_await(hooks.on_tool_call(ctx, tool.name, args))
        if flags.before_tool_exec:
            loop: LoopHooks = agent.loop_hooks  # type: ignore[assignment]
            return await maybe_await(loop.before_tool_exec(ctx, tool.name, args))
        return None

    async def before_approval(self, request: ApprovalRequest) -> None:
        journal = self._scope.journal
        if journal is not None:  # what the run did so far is durable before a human waits
            await journal.flush()

    async def after(self, tool: Tool, call: ToolCall, content: str) -> str:
        agent = self._scope.agent
        if not agent.hook_flags.after_tool_exec:
            return content
        loop: LoopHooks = agent.loop_hooks  # type: ignore[assignment]
        replaced = await maybe_await(loop.after_tool_exec(self._scope.ctx, tool.name, content))
        return content if replaced is None else replaced


def start_batch(
    scope: RunScope,
    calls: Sequence[ToolCall],
    decisions: Mapping[str, ApprovalDecision] | None = None,
    *,
    numbered: bool = True,
) -> ToolBatch:
    """Validate the calls of a step and bind them to the executor; iterate ``events()``.

    ``decisions`` are human decisions on calls that waited for approval (a resumed run).
    With ``numbered=False`` the events come with ``seq`` 0: the caller numbers them.
    """
    agent = scope.agent
    hooks = (
        _HookBridge(scope) if agent.hook_flags.any_tool_hook or scope.journal is not None else None
    )
    return agent.executor.batch(
        calls,
        scope.ctx,
        next_seq=scope.next_seq if numbered else _unnumbered,
        hooks=hooks,
        decisions=decisions,
    )


def _unnumbered() -> int:
    return 0


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
    tools = scope.agent.tools
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
        metadata = outcome.metadata
        if metadata:
            note_outcome(state, outcome)  # the provenance ledger (data-flow policy)
            promote = metadata.get(PROMOTE_TOOLS)
            if promote:
                _promote(state.promoted_tools, tools, promote)
            summary = metadata.get("bastion.summary_usage")
            if isinstance(summary, Usage):  # a result summarised by a cheaper model
                state.add_usage(str(metadata.get("bastion.summary_model")), summary)
            nested = metadata.get(NESTED_USAGE)
            if isinstance(nested, dict):  # a sub-agent's model calls (Agent.as_tool)
                for model, usage in nested.items():  # pyright: ignore[reportUnknownVariableType]
                    if isinstance(usage, Usage):
                        state.add_usage(str(model), usage)  # pyright: ignore[reportUnknownArgumentType]
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
            error_kind=kind,  # pyright: ignore[reportArgumentType]
            duration=duration,
        )
    )


def _promote(promoted: list[str], tools: Mapping[str, Tool], names: Any) -> None:
    """Add the deferred tools named by a result (``tool_search``) to the run's catalogue.

    Names of unknown or eager tools are ignored: a result can only reveal deferred tools.
    """
    for name in names if isinstance(names, (list, tuple)) else ():  # pyright: ignore[reportUnknownVariableType]
        tool = tools.get(name) if isinstance(name, str) else None
        if tool is not None and tool.defer_loading and name not in promoted:
            promoted.append(name)  # pyright: ignore[reportUnknownArgumentType]  # checked str


def unreported_events(scope: RunScope) -> list[AgentEvent]:
    """End events for the calls of an interrupted batch that never got one, in call order."""
    events: list[AgentEvent] = []
    for call, outcome in scope.unreported:
        aborted = ToolOutcome(
            call=call, content=ABORTED_RESULT, is_error=True, error_kind="aborted"
        )
        events.append(end_event(outcome or aborted, scope.run_id, scope.next_seq()))
    scope.unreported = []
    return events
