"""The exhaustive, typed event stream of a run.

Every event carries the ``run_id`` and a ``seq`` number that increases by one per event of
the run, so a client that lost its connection can resume after the last number it saw.
Producers build events with ``seq`` 0; the run loop numbers each event once, as it yields
it, and nothing changes an event after that.
Events are discriminated by their dotted ``type``. Consumers should match exhaustively::

    match event:
        case TextDeltaEvent(delta=d): ...
        case _: assert_never(event)   # type checkers flag a missing case
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal, TypeAlias

from ._model import FinishReason
from ._usage import Usage

__all__ = [
    "AgentCancellingEvent",
    "AgentEndEvent",
    "AgentErrorEvent",
    "AgentEvent",
    "AgentFollowUpEvent",
    "AgentStartEvent",
    "AgentSteeredEvent",
    "AgentSuggestionsEvent",
    "ContextCompactedEvent",
    "ContextCompactionFailedEvent",
    "GovernanceEvent",
    "GuardrailTrippedEvent",
    "HandoffEvent",
    "ModelCircuitEvent",
    "ModelFellbackEvent",
    "ModelRetryEvent",
    "ReasoningDeltaEvent",
    "RunErrorInfo",
    "RunStatus",
    "StepEndEvent",
    "StepStartEvent",
    "SubagentEvent",
    "TextCompleteEvent",
    "TextDeltaEvent",
    "ToolApprovalRequestedEvent",
    "ToolApprovalResolvedEvent",
    "ToolCallDeltaEvent",
    "ToolCallEndEvent",
    "ToolCallIncompleteEvent",
    "ToolCallStartEvent",
    "ToolErrorKind",
    "ToolExecuteEndEvent",
    "ToolExecuteErrorEvent",
    "ToolExecutePartialEvent",
    "ToolExecuteProgressEvent",
    "ToolExecuteStartEvent",
    "ToolLoopDetectedEvent",
    "ToolRetryEvent",
    "ToolSourceErrorEvent",
    "VerifierResultEvent",
]

RunStatus: TypeAlias = Literal[
    "running", "completed", "failed", "aborted", "awaiting_approval", "stopped"
]
ToolErrorKind: TypeAlias = Literal[
    "approval_denied",
    "sandbox_violation",
    "timeout",
    "invalid_input",
    "invalid_output",
    "execution_failed",
    "unknown_tool",
    "aborted",
    "inbound_sanitization_blocked",
    "dataflow_policy_blocked",
    "capability_blocked",
    "rate_limited",
]


@dataclass(kw_only=True, slots=True)
class RunErrorInfo:
    """Why a run failed: a stable ``code`` and a human-readable message."""

    code: str
    message: str


@dataclass(kw_only=True, slots=True)
class AgentStartEvent:
    """A run began, or (``resumed``) a suspended run continues."""

    run_id: str
    seq: int = 0
    agent_name: str
    model: str
    resumed: bool = False
    type: Literal["agent.start"] = "agent.start"


@dataclass(kw_only=True, slots=True)
class StepStartEvent:
    """A step (one model call and the tool calls it asks for) began."""

    run_id: str
    seq: int = 0
    step: int
    model: str
    type: Literal["step.start"] = "step.start"


@dataclass(kw_only=True, slots=True)
class TextDeltaEvent:
    """A piece of the model's answer text."""

    run_id: str
    seq: int = 0
    delta: str
    type: Literal["text.delta"] = "text.delta"


@dataclass(kw_only=True, slots=True)
class TextCompleteEvent:
    """The model's text for this step is complete."""

    run_id: str
    seq: int = 0
    text: str
    type: Literal["text.complete"] = "text.complete"


@dataclass(kw_only=True, slots=True)
class ReasoningDeltaEvent:
    """A piece of the model's reasoning."""

    run_id: str
    seq: int = 0
    delta: str
    type: Literal["reasoning.delta"] = "reasoning.delta"


@dataclass(kw_only=True, slots=True)
class ToolCallStartEvent:
    """The model began writing a tool call."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    type: Literal["tool.call.start"] = "tool.call.start"


@dataclass(kw_only=True, slots=True)
class ToolCallDeltaEvent:
    """A piece of a tool call's JSON arguments, as the model writes them."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    args_delta: str
    type: Literal["tool.call.delta"] = "tool.call.delta"


@dataclass(kw_only=True, slots=True)
class ToolCallEndEvent:
    """The model finished writing a tool call; ``arguments`` is its raw JSON."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    arguments: str
    type: Literal["tool.call.end"] = "tool.call.end"


@dataclass(kw_only=True, slots=True)
class ToolCallIncompleteEvent:
    """The stream ended while a tool call was still open; the call is not executed."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    type: Literal["tool.call.incomplete"] = "tool.call.incomplete"


@dataclass(kw_only=True, slots=True)
class ToolExecuteStartEvent:
    """A tool call was dispatched. Emitted for every call of a step, up front, in call order.

    ``sandbox`` says what the call's runtime is (``"none"`` or the sandbox's limits), when
    the run has a runtime; the tool's own Python code always runs in this process.
    """

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    arguments: str
    sandbox: str | None = None
    type: Literal["tool.execute.start"] = "tool.execute.start"


@dataclass(kw_only=True, slots=True)
class ToolExecuteProgressEvent:
    """A running tool reported progress. Interleaves live, keyed by ``tool_call_id``."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    current: float
    total: float | None = None
    message: str | None = None
    type: Literal["tool.execute.progress"] = "tool.execute.progress"


@dataclass(kw_only=True, slots=True)
class ToolExecutePartialEvent:
    """A running tool streamed a piece of its output."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    content: str
    type: Literal["tool.execute.partial"] = "tool.execute.partial"


@dataclass(kw_only=True, slots=True)
class ToolExecuteEndEvent:
    """A tool call succeeded; ``result`` is what the model will read. In call order."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    result: str
    duration: float
    type: Literal["tool.execute.end"] = "tool.execute.end"


@dataclass(kw_only=True, slots=True)
class ToolExecuteErrorEvent:
    """A tool call failed; the model reads ``message`` as an error result. In call order."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    kind: ToolErrorKind
    message: str
    duration: float = 0.0
    type: Literal["tool.execute.error"] = "tool.execute.error"


@dataclass(kw_only=True, slots=True)
class ToolSourceErrorEvent:
    """A tool source (an MCP server) could not list its tools; the run goes on without them.

    Attributes:
        source: The source's name.
        message: What failed, for humans.
    """

    run_id: str
    seq: int = 0
    source: str
    message: str
    type: Literal["tool.source.error"] = "tool.source.error"


@dataclass(kw_only=True, slots=True)
class ToolRetryEvent:
    """A tool that may safely run again was rate-limited; it runs again after ``delay`` s.

    Only tools that are ``pure``, ``read_only`` or have an idempotency key are retried.

    Attributes:
        attempt: The number of the attempt about to be made (2 for the first retry).
        delay: Seconds waited before it, on the run's clock.
        error: The error of the attempt that failed.
    """

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    attempt: int
    delay: float
    error: str
    type: Literal["tool.execute.retry"] = "tool.execute.retry"


@dataclass(kw_only=True, slots=True)
class ToolLoopDetectedEvent:
    """The model called one tool with identical arguments ``count`` times in this run.

    Attributes:
        count: How many times, this call included.
        action: ``warn`` (the call runs; its result tells the model) or ``fail`` (the run
            fails with code ``loop_detected``; the call does not run).
    """

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    arguments: str
    count: int
    action: Literal["warn", "fail"]
    type: Literal["tool.loop.detected"] = "tool.loop.detected"


@dataclass(kw_only=True, slots=True)
class VerifierResultEvent:
    """A verifier judged the final answer.

    Attributes:
        verifier: The verifier's name.
        passed: Whether the answer passed (a verifier that raised counts as passed).
        feedback: What a failing verifier told the model (empty when it passed).
        round: The verification round, from 1 (one round per final answer).
        error: The exception a verifier raised, for humans; ``None`` when it returned.
    """

    run_id: str
    seq: int = 0
    verifier: str
    passed: bool
    feedback: str
    round: int
    error: str | None = None
    type: Literal["verifier.result"] = "verifier.result"


@dataclass(kw_only=True, slots=True)
class ToolApprovalRequestedEvent:
    """A tool call waits for a human decision; carries the tool's classification."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    arguments: str
    classification: dict[str, Any] = field(default_factory=dict)
    reason: str | None = None
    type: Literal["tool.approval.requested"] = "tool.approval.requested"


@dataclass(kw_only=True, slots=True)
class ToolApprovalResolvedEvent:
    """A call that waited for approval was decided (callback, directive or timeout)."""

    run_id: str
    seq: int = 0
    tool_call_id: str
    tool_name: str
    granted: bool
    reason: str | None = None
    timed_out: bool = False
    type: Literal["tool.approval.resolved"] = "tool.approval.resolved"


@dataclass(kw_only=True, slots=True)
class ContextCompactedEvent:
    """Older turns were compacted to fit the context window.

    ``hook_errors`` names the post-compaction hooks that failed (the compaction stands).
    """

    run_id: str
    seq: int = 0
    before_tokens: int
    after_tokens: int
    summary_tokens: int = 0
    duration: float = 0.0
    hooks_fired_count: int = 0
    source: Literal["auto-trigger", "manual", "pre-step"] = "auto-trigger"
    strategy: str = ""
    hook_errors: tuple[str, ...] = ()
    type: Literal["context.compacted"] = "context.compacted"


@dataclass(kw_only=True, slots=True)
class ContextCompactionFailedEvent:
    """A compaction could not be made (the summarizer failed, a budget refused it).

    The run goes on with its history as it was.
    """

    run_id: str
    seq: int = 0
    tokens: int
    strategy: str
    reason: str
    type: Literal["context.compaction_failed"] = "context.compaction_failed"


@dataclass(kw_only=True, slots=True)
class StepEndEvent:
    """A step ended: its finish reason and usage."""

    run_id: str
    seq: int = 0
    step: int
    model: str
    finish_reason: FinishReason
    usage: Usage
    type: Literal["step.end"] = "step.end"


@dataclass(kw_only=True, slots=True)
class GuardrailTrippedEvent:
    """A guardrail did not pass: it blocked, warned or rewrote."""

    run_id: str
    seq: int = 0
    guardrail: str
    stage: Literal["input", "output"]
    action: Literal["block", "warn", "rewrite"]
    reason: str
    type: Literal["guardrail.tripped"] = "guardrail.tripped"


@dataclass(kw_only=True, slots=True)
class GovernanceEvent:
    """A governance signal of the run: a policy decision, limit check, mutation or interrupt.

    ``signal`` is the governor's dotted signal name (``oracle.exec.in``, ``oracle.denied``,
    ``oracle.exceeded``, ``oracle.interrupt.in``, ``oracle.policy.<oracle>``, ...); ``data``
    holds its JSON-ready fields (the action ``key``, amounts, reasons, ...).
    """

    run_id: str
    seq: int = 0
    signal: str
    data: dict[str, Any] = field(default_factory=dict[str, Any])
    type: Literal["governance.signal"] = "governance.signal"


@dataclass(kw_only=True, slots=True)
class ModelRetryEvent:
    """A model call failed transiently and will be tried again after ``delay`` seconds."""

    run_id: str
    seq: int = 0
    model: str
    attempt: int
    delay: float
    error: str
    type: Literal["agent.model.retry"] = "agent.model.retry"


@dataclass(kw_only=True, slots=True)
class ModelFellbackEvent:
    """The step moves to the next fallback model.

    ``reason`` is ``error`` when ``previous_model`` failed with ``error``, and
    ``circuit_open`` when it was skipped without a call because its circuit is open.
    """

    run_id: str
    seq: int = 0
    previous_model: str
    next_model: str
    error: str
    reason: Literal["error", "circuit_open"] = "error"
    type: Literal["agent.model.fellback"] = "agent.model.fellback"


@dataclass(kw_only=True, slots=True)
class ModelCircuitEvent:
    """A model's circuit breaker changed state.

    ``open``: the model failed too often in a row and is skipped by every run sharing the
    breaker until ``cool_down`` seconds have passed; then one call probes it. ``closed``:
    a probe succeeded and the model is used again. ``error`` is the failure that opened it.
    """

    run_id: str
    seq: int = 0
    model: str
    state: Literal["open", "closed"]
    failures: int = 0
    cool_down: float = 0.0
    error: str | None = None
    type: Literal["agent.model.circuit"] = "agent.model.circuit"


@dataclass(kw_only=True, slots=True)
class AgentCancellingEvent:
    """An abort was requested; with ``drain`` the current step finishes first."""

    run_id: str
    seq: int = 0
    drain: bool
    type: Literal["agent.cancelling"] = "agent.cancelling"


@dataclass(kw_only=True, slots=True)
class AgentSteeredEvent:
    """A steering message (``stream.steer``) joined the transcript before the next model call."""

    run_id: str
    seq: int = 0
    text: str
    type: Literal["agent.steered"] = "agent.steered"


@dataclass(kw_only=True, slots=True)
class AgentFollowUpEvent:
    """The turn ended with an answer and a follow-up (``stream.follow_up``) starts the next."""

    run_id: str
    seq: int = 0
    text: str
    output: Any
    type: Literal["agent.followup.queued"] = "agent.followup.queued"


@dataclass(kw_only=True, slots=True)
class AgentSuggestionsEvent:
    """What the user may ask next (``RunOptions(suggestions=...)``), after a completed run.

    ``error`` says why there are none when the suggestion call failed (the run stands).
    """

    run_id: str
    seq: int = 0
    suggestions: list[str]
    model: str
    error: str | None = None
    type: Literal["agent.suggestions"] = "agent.suggestions"


@dataclass(kw_only=True, slots=True)
class AgentErrorEvent:
    """The run failed; followed by ``agent.end`` with status ``failed``."""

    run_id: str
    seq: int = 0
    code: str
    message: str
    type: Literal["agent.error"] = "agent.error"


@dataclass(kw_only=True, slots=True)
class AgentEndEvent:
    """The last event of every run."""

    run_id: str
    seq: int = 0
    status: RunStatus
    output: Any
    usage: Usage
    error: RunErrorInfo | None = None
    steps: int = 0
    duration: float = 0.0
    type: Literal["agent.end"] = "agent.end"


@dataclass(kw_only=True, slots=True)
class SubagentEvent:
    """An event of a sub-agent's run, forwarded live into its parent's stream.

    A parent's tool call that runs another agent (``Agent.as_tool``) wraps each event of
    the child run: ``event`` keeps the child's own ``run_id`` and ``seq``, while ``run_id``
    and ``seq`` here are the parent's. Nested sub-agents nest the wrappers.

    Attributes:
        tool_call_id: The parent's call that runs the child.
        agent_name: The child agent.
        child_run_id: The child's run (its journal, when it has a store).
        ancestry: Agent names from the root run's agent down to the child (its depth in
            the tree is ``len(ancestry) - 1``).
        event: The child's event.
    """

    run_id: str
    seq: int = 0
    tool_call_id: str
    agent_name: str
    child_run_id: str = ""
    ancestry: tuple[str, ...] = ()
    event: AgentEvent
    type: Literal["subagent.event"] = "subagent.event"


@dataclass(kw_only=True, slots=True)
class HandoffEvent:
    """The conversation passed to another agent, which continues the run.

    ``input_filter`` is the descriptor of the filter that shaped what crossed (as JSON);
    ``arguments`` what the model gave the ``transfer_to_<name>`` call.
    """

    run_id: str
    seq: int = 0
    from_agent: str
    to_agent: str
    tool_call_id: str
    arguments: dict[str, Any] = field(default_factory=dict[str, Any])
    input_filter: dict[str, Any] = field(default_factory=dict[str, Any])
    messages_before: int = 0
    messages_after: int = 0
    type: Literal["agent.handoff"] = "agent.handoff"


AgentEvent: TypeAlias = (
    AgentStartEvent
    | StepStartEvent
    | TextDeltaEvent
    | TextCompleteEvent
    | ReasoningDeltaEvent
    | ToolCallStartEvent
    | ToolCallDeltaEvent
    | ToolCallEndEvent
    | ToolCallIncompleteEvent
    | ToolExecuteStartEvent
    | ToolExecuteProgressEvent
    | ToolExecutePartialEvent
    | ToolExecuteEndEvent
    | ToolExecuteErrorEvent
    | ToolSourceErrorEvent
    | ToolRetryEvent
    | ToolLoopDetectedEvent
    | VerifierResultEvent
    | ToolApprovalRequestedEvent
    | ToolApprovalResolvedEvent
    | ContextCompactedEvent
    | ContextCompactionFailedEvent
    | StepEndEvent
    | GuardrailTrippedEvent
    | GovernanceEvent
    | ModelRetryEvent
    | ModelFellbackEvent
    | ModelCircuitEvent
    | AgentCancellingEvent
    | AgentSteeredEvent
    | AgentFollowUpEvent
    | AgentSuggestionsEvent
    | AgentErrorEvent
    | AgentEndEvent
    | SubagentEvent
    | HandoffEvent
)
