"""Handoff: the loop's side of ``transfer_to_<name>``, making another agent the active one.

A handoff tool ran like any other (gate, policies, validation, ``on_handoff``); once its
step is complete, :func:`take_handoff` does the transfer: the conversation goes through the
handoff's input filter (then ``strip_reasoning``, always), the target's instructions
replace the leading system prompt, and the target's configuration (model, tools, hooks,
output type, context window) becomes the scope's, so the next model call is the target's.
The run keeps its id, journal, governance and usage. The transfer is journaled
(``handoff`` entry, with the filtered history) once its ``agent.handoff`` event is
numbered, so a resumed run continues with the target without filtering again.

Called by the loop after a live step, after a resumed step, and after a recovered one (a
crash between the transfer tool's result and the ``handoff`` entry).
"""

from __future__ import annotations

import inspect
import json
from collections.abc import AsyncGenerator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bastion._lazy import lazy_module
from bastion.agent import _setup
from bastion.agent._entries import HandoffEntry, Spent
from bastion.agent._handoffs import (
    Handoff,
    HandoffError,
    HandoffLimitExceeded,
    handoff_of,
)
from bastion.agent._scope import RunScope
from bastion.context import TranscriptGuard
from bastion.core import (
    AssistantMessage,
    HandoffEvent,
    Message,
    Model,
    ModelRequest,
    SystemMessage,
    ToolCall,
    ToolMessage,
    Usage,
    UserMessage,
)

if TYPE_CHECKING:
    from bastion import filters
    from bastion.agent import _context
    from bastion.agent._config import RunConfig
    from bastion.agent._state import RunState
    from bastion.filters import Summary
    from bastion.security import Provenance
    from bastion.tools import ToolBatch
else:
    _context = lazy_module("bastion.agent._context")  # compaction loads with the first summary
    filters = lazy_module("bastion.filters")

__all__ = ["activate", "refuse_extra_handoffs", "take_handoff"]

_EXTRA = (
    "Handoff to {name!r} was not made: this answer already hands the conversation to "
    "{first!r}, and one answer makes one handoff."
)


def refuse_extra_handoffs(scope: RunScope, batch: ToolBatch, calls: Sequence[ToolCall]) -> None:
    """Before a step's tools run: one handoff per answer, within the run's limit.

    Raises:
        HandoffLimitExceeded: The run already made the agent's ``max_handoffs``.
        UnknownHandoffTarget: The target named by the handoff is not registered.
    """
    handoffs = scope.config.handoffs
    assert handoffs is not None  # called only for agents with handoffs
    tools = scope.tools.by_name
    first: Handoff | None = None
    for call in calls:
        tool = tools.get(call.name)
        spec = handoff_of(tool) if tool is not None else None
        if spec is None:
            continue
        if first is not None:
            batch.refuse(
                call.id,
                "execution_failed",
                _EXTRA.format(name=spec.target_name, first=first.target_name),
            )
            continue
        first = spec
        _check_limit(scope, handoffs.max_handoffs)
        handoffs.target(spec)  # an unknown target fails the run before any tool runs


def _check_limit(scope: RunScope, limit: int) -> None:
    if scope.state.handoffs >= limit:
        raise HandoffLimitExceeded(
            f"Agent {scope.config.name!r} tried a handoff after the run made {limit} "
            f"(max_handoffs={limit}). Raise RunOptions(max_handoffs=...) or let the agent answer."
        )


def _pending(scope: RunScope) -> tuple[ToolCall, Handoff] | None:
    """The successful handoff call of the last completed step not yet transferred."""
    messages = scope.state.messages
    results: dict[str, ToolMessage] = {}
    index = len(messages) - 1
    while index >= 0 and isinstance(messages[index], ToolMessage):
        result = messages[index]
        assert isinstance(result, ToolMessage)
        results[result.tool_call_id] = result
        index -= 1
    answer = messages[index] if index >= 0 else None
    if not isinstance(answer, AssistantMessage) or not results:
        return None
    if scope.state.handoff_step == scope.state.step:  # this step's answer handed off already
        return None
    tools = scope.config.tools.by_name
    for call in answer.tool_calls:
        tool = tools.get(call.name)
        spec = handoff_of(tool) if tool is not None else None
        result = results.get(call.id)
        if spec is None or result is None or result.is_error:
            continue
        return call, spec
    return None


async def take_handoff(scope: RunScope) -> AsyncGenerator[HandoffEvent, None]:
    """Transfer to the target of the last step's handoff call, if it made one."""
    pending = _pending(scope)
    if pending is None:
        return
    call, spec = pending
    handoffs = scope.config.handoffs
    assert handoffs is not None  # a handoff tool comes from the agent's handoffs
    _check_limit(scope, handoffs.max_handoffs)
    target = handoffs.target(spec).config
    _check_governance(scope, target)
    descriptor = spec.boundary
    state = scope.state
    source = scope.config
    spent: list[Spent] = []

    async def summarize(span: Sequence[Message], summary: Summary) -> str:
        return await _summarize(scope, span, summary, (source, target), spent)

    before = len(state.messages)
    kept = await filters.apply_filter(
        descriptor,
        state.messages,
        filters.FilterContext(summarize=summarize, provenance=_provenance(state)),
    )
    start = 0
    while start < len(kept) and isinstance(kept[start], SystemMessage):
        start += 1
    instructions = await _instructions(scope, target)
    opening: list[Message] = [SystemMessage(content=instructions)] if instructions else []
    state.messages[:] = [*opening, *kept[start:]]
    state.active_agent = None if target.name == state.agent_name else target.name
    state.handoffs += 1
    state.handoff_step = state.step
    activate(scope, target)
    shape: dict[str, Any] = json.loads(spec.boundary_json)  # the event's own copy
    event = HandoffEvent(
        run_id=scope.run_id,
        from_agent=source.name,
        to_agent=target.name,
        tool_call_id=call.id,
        arguments=_arguments(call.arguments),
        input_filter=shape,
        messages_before=before,
        messages_after=len(state.messages),
    )
    try:
        yield event
    finally:  # numbered by now; journaled even if the consumer stops here
        journal = scope.journal
        if journal is not None:
            journal.handed_off(
                HandoffEntry(
                    event_seq=event.seq,
                    from_agent=source.name,
                    to_agent=target.name,
                    tool_call_id=call.id,
                    step=state.step,
                    messages=list(state.messages),
                    input_filter=json.loads(spec.boundary_json),
                    spent=spent,
                )
            )


def activate(scope: RunScope, config: RunConfig) -> None:
    """Make ``config``'s agent the one the scope runs (a transfer, or a resumed run)."""
    wrap = scope.config.handoff_gate
    if wrap is not None:  # a driven run: the application decides the target's calls too
        config = replace(config, executor=wrap(config.executor), handoff_gate=wrap)
    link = scope.session_link
    if link is not None:  # the session decides tool calls before the agent's hooks
        executor = config.executor
        gate = executor.gate.with_first_hook(link.before_tool_call)
        config = replace(config, executor=executor.with_gate(gate))
    scope.config = config
    scope.tools = config.catalog.current()
    scope.window = config.context.window() if config.context is not None else None
    scope.guard = TranscriptGuard()  # the history was replaced: check all of it again
    scope.pinned_model = None
    scope.model_hint = None
    scope.withheld_tools = frozenset()
    scope.output_mode = None
    ctx = scope.ctx
    ctx.agent_name = config.name
    ctx.runtime = config.runtime
    ctx.sandbox = config.sandbox
    ctx.event_bus = config.event_bus


def _check_governance(scope: RunScope, target: RunConfig) -> None:
    own = target.governance
    run = scope.governance
    if own is not None and (run is None or own.governor is not run.governor):
        raise HandoffError(
            f"Agent {target.name!r} has its own governor, but the run it would take over "
            f"(agent {scope.config.name!r}) is governed by another (or none). A run keeps "
            "its governance across handoffs: share one Governor "
            "(GovernanceOptions(governor=...)) or configure the policies on the first agent."
        )


async def _instructions(scope: RunScope, target: RunConfig) -> str:
    instructions: Any = target.instructions
    if callable(instructions):
        instructions = instructions(scope.ctx)
        if inspect.isawaitable(instructions):
            instructions = await instructions
    return str(instructions) if instructions else ""


def _summary_model(summary: Summary, agents: tuple[RunConfig, RunConfig]) -> Model:
    key = summary.model
    if key is None:
        return agents[0].model
    for config in agents:
        for model in config.models:
            if model.key == key:
                return model
    return _setup.resolve_model(key, "filters.summary(model=...)")


async def _summarize(
    scope: RunScope,
    span: Sequence[Message],
    summary: Summary,
    agents: tuple[RunConfig, RunConfig],
    spent: list[Spent],
) -> str:
    """A summary of ``span``: a model call of the run, governed, its usage counted."""
    model = _summary_model(summary, agents)
    request = ModelRequest(
        messages=[
            SystemMessage(content=summary.instructions or _context.SUMMARY_INSTRUCTIONS),
            UserMessage(content=_context.render_span(span)),
        ]
    )
    governance = scope.governance
    if governance is not None:
        substitute = await governance.guard(governance.check_model(model, request))
        if substitute is not None:  # an interrupt decision supplied the summary
            return str(substitute.value)
    response = await model.request(request)
    usage: Usage = response.usage
    if governance is not None:
        await governance.guard(governance.record_model(model, usage))
    scope.state.add_usage(model.key, usage)
    scope.ctx.usage = scope.state.usage
    spent.append(Spent(model=model.key, usage=usage))
    return response.message.text


def _provenance(state: RunState) -> dict[str, Provenance]:
    """The run's provenance of each tool output, by call id (data-flow policy)."""
    found: dict[str, Provenance] = {}
    for record in state.dataflow.records if state.dataflow is not None else ():
        call_id = record.provenance.tool_call_id
        if call_id is not None:
            found[call_id] = record.provenance
    return found


def _arguments(text: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}  # pyright: ignore[reportUnknownVariableType]
