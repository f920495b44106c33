"""Durable child runs: the run a parent's tool call starts, parks and resumes.

:func:`run_child` is the one primitive every agent-runs-agent feature uses (``as_tool``,
``subagents``, and at merge fan-out children and handoffs). Its contract:

- **Identity.** The child's run id is derived from the parent's run id, the step and the
  parent's tool call id (:func:`child_run_id`). The parent's ``tool_call_started``
  entry is journaled before the call runs, so the link is in the parent's journal
  before the child exists, with no window in between; the child's ``metadata`` links
  back to the parent.
- **Resume, never restart.** When the call runs again (the parent resumed after a crash,
  or after a decision), a child run already in the store is continued: a finished one
  gives its result again, a crashed one recovers from its own journal, a suspended one
  is resumed with the decision. No model call or tool run of the child is repeated.
- **Parking.** A child that ends ``awaiting_approval`` raises
  :class:`~bastion.tools.InputRequired`: the parent's call is left pending (the parent
  suspends too) with a question whose ``source`` is ``agent:<name>`` and whose
  ``context`` names the child run and what it waits for (its pending calls and
  interrupts). Deciding the parent's call decides the child's: a plain approve grants
  everything the child waits for, a deny denies it (the child's model reads the denial),
  and an answer
  (``InputAnswer(content={"approvals": {...}, "interrupts": [...]})``) decides each.
- **Without a store** the child's suspended state travels in the question's ``context``
  (journaled with the parent's state), so an in-memory parent can be resumed from its
  ``RunState`` too.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, TypedDict, cast

from bastion.agent._child_answer import CHILD_SOURCE as _SOURCE
from bastion.agent._child_answer import DENIED as _DENIED
from bastion.agent._governance import held_calls
from bastion.agent._persist import run_state_from_json, run_state_to_json
from bastion.agent._scope import AbortRequest, RunScope
from bastion.core import AgentEvent, Message, RunContext
from bastion.tools import (
    ApprovalDecision,
    ApprovalRequest,
    Directive,
    InputAnswer,
    InputRequest,
    InputRequired,
    InterruptResolution,
)

if TYPE_CHECKING:
    from bastion.agent._config import RunConfig
    from bastion.agent._result import RunResult
    from bastion.agent._stream import AgentStream
    from bastion.core import JsonObject, JsonValue
    from bastion.governance import InterruptDecision

    from ._subrun import Delegate

__all__ = ["ChildRun", "child_run_id", "run_child"]

_ANSWER_SCHEMA: JsonObject = {
    "type": "object",
    "properties": {
        "approvals": {"type": "object", "additionalProperties": {"type": "boolean"}},
        "reasons": {"type": "object", "additionalProperties": {"type": "string"}},
        "interrupts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"interrupt_id": {"type": "string"}, "decision": {}},
                "required": ["interrupt_id", "decision"],
                "additionalProperties": False,
            },
        },
    },
    "additionalProperties": False,
}


class _Pending(TypedDict):
    """A call the child waits for, as the parent's question names it."""

    tool_call_id: str
    tool_name: str
    arguments: Mapping[str, object]
    reason: str | None


class _Held(TypedDict):
    """A governance interrupt the child waits for, as the parent's question names it."""

    id: str
    reason: str


class _Question(TypedDict, total=False):
    """The ``context`` of the parent's question: the child run and what it waits for."""

    run_id: str
    agent: str
    pending: list[_Pending]
    interrupts: list[_Held]
    state: str  # the child's suspended state, without a store


class _InterruptAnswer(TypedDict):
    """One interrupt's decision in an answer (``InterruptResolution``'s fields)."""

    interrupt_id: str
    decision: InterruptDecision | Mapping[str, JsonValue]


class _Answer(TypedDict, total=False):
    """The ``content`` of an answer to the parent's question (``_ANSWER_SCHEMA``)."""

    approvals: dict[str, bool]
    reasons: dict[str, str]
    interrupts: list[_InterruptAnswer]
    reason: str  # a decline's reason


def child_run_id(parent_run_id: str, step: int, tool_call_id: str) -> str:
    """The run id of the child started by call ``tool_call_id`` of step ``step``."""
    seed = f"{parent_run_id}\x00{step}\x00{tool_call_id}".encode()
    return f"run_{hashlib.sha256(seed).hexdigest()[:32]}"


@dataclass(frozen=True, kw_only=True, slots=True)
class ChildRun:
    """One child run of a parent's tool call (what :func:`run_child` starts or continues).

    Attributes:
        agent: The child agent.
        config: The configuration it runs with under the parent (governance, approvals,
            store, capability already applied).
        input: The task.
        history: The messages it starts with (``None``: none).
        metadata: Its run's metadata (the links to the parent).
    """

    agent: Delegate
    config: RunConfig
    input: str
    history: list[Message] | None = None
    metadata: Mapping[str, object]


async def run_child(
    child: ChildRun,
    ctx: RunContext[object],
    parent: RunScope | None,
    on_event: Callable[[AgentEvent], None] | None,
) -> RunResult[object]:
    """Start or continue ``child`` for the current tool call of ``ctx``'s run.

    ``on_event`` sees each of the child's events (``None``: the child is drained, with no
    per-event cost).

    Raises:
        InputRequired: The child suspended: the parent's call waits for the decision.
    """
    assert ctx.tool_call_id is not None  # a child runs inside a tool call
    run_id = child_run_id(ctx.run_id, ctx.step, ctx.tool_call_id)
    stream = await _open(child, ctx, run_id)

    def follow(request: AbortRequest) -> None:
        stream.abort(drain=request.drain)

    if parent is not None:
        if parent.abort is not None:  # asked to stop before this call began
            follow(parent.abort)
        parent.abort_listeners.append(follow)
    try:
        if on_event is None:
            result = await stream.drain()
        else:
            async for event in stream:
                on_event(event)
            result = stream.result
    finally:
        if parent is not None:
            parent.abort_listeners.remove(follow)
    if result.status == "awaiting_approval":
        raise InputRequired(_question(child, result))
    return result


async def _open(child: ChildRun, ctx: RunContext[object], run_id: str) -> AgentStream[object]:
    """The child's stream: a new run, or the run of this call already started."""
    agent, config = child.agent, child.config
    answer = ctx.input_answer
    asked = answer.request if isinstance(answer, InputAnswer) else None
    context: _Question = {}
    if asked is not None and asked.context.get("run_id") == run_id:
        context = cast("_Question", asked.context)  # the question _question asked
    decided = _directive(cast("InputAnswer", answer), context) if context else None
    store = config.store
    if store is not None:
        if store is agent.config.store:
            await agent.stores()  # the child's own store: open it (the parent's is open)
        if await store.journal.get_run(run_id) is not None:
            return agent.resume_stream(run_id, directive=decided, deps=ctx.deps, config=config)
    elif "state" in context:
        state = run_state_from_json(context["state"])
        return agent.stream(state, directive=decided, deps=ctx.deps, config=config)
    return agent.stream(
        child.input,
        message_history=child.history,
        deps=ctx.deps,
        session_id=ctx.session_id,
        user_id=ctx.user_id,
        tenant_id=ctx.tenant_id,
        metadata=dict(child.metadata),
        config=config,
        run_id=run_id,
    )


def _directive(answer: InputAnswer, context: _Question) -> Directive:
    """The child's directive from the answer to the parent's pending call."""
    pending = [str(p["tool_call_id"]) for p in context.get("pending", [])]
    content = cast("_Answer", answer.content or {})  # valid against _ANSWER_SCHEMA
    if answer.action != "accept":
        reason = str(content.get("reason") or _DENIED)
        return Directive(
            approvals=[
                ApprovalDecision(tool_call_id=i, granted=False, reason=reason) for i in pending
            ]
        )
    chosen = content.get("approvals") or {}
    reasons = content.get("reasons") or {}
    approvals = [
        ApprovalDecision(tool_call_id=i, granted=chosen.get(i, True), reason=reasons.get(i) or None)
        for i in pending
    ]
    interrupts = [InterruptResolution(**item) for item in content.get("interrupts") or []]
    return Directive(approvals=approvals, interrupts=interrupts)


def _question(child: ChildRun, result: RunResult[object]) -> InputRequest:
    """What the parent's pending call asks: the decisions the child waits for."""
    name = child.config.name
    state = result.state
    assert state is not None  # a suspended run keeps its state
    held = held_calls(state.interrupts)
    pending = [p for p in result.pending_approvals if p.tool_call_id not in held]
    needs = [f"approval of tool {p.tool_name!r} ({p.reason or 'needs approval'})" for p in pending]
    needs += [
        f"a decision on {i.interrupt.action!r} ({i.interrupt.reason})" for i in state.interrupts
    ]
    context: _Question = {
        "run_id": result.run_id,
        "agent": name,
        "pending": [_pending(p) for p in pending],
        "interrupts": [{"id": i.id, "reason": i.interrupt.reason} for i in state.interrupts],
    }
    if child.config.store is None:
        context["state"] = run_state_to_json(state)
    return InputRequest(
        message=f"sub-agent {name!r} (run {result.run_id}) waits for {'; '.join(needs)}",
        schema=_ANSWER_SCHEMA,
        source=f"{_SOURCE}{name}",
        context=dict(context),
    )


def _pending(request: ApprovalRequest) -> _Pending:
    return {
        "tool_call_id": request.tool_call_id,
        "tool_name": request.tool_name,
        "arguments": request.arguments,
        "reason": request.reason,
    }
