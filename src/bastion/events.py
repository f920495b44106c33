"""The events a run streams and the chunks a model streams, in one public module.

``async for event in agent.stream(...)`` yields the :data:`AgentEvent` union of the
``...Event`` types here; a :class:`~bastion.core.Model` streams the ``...Chunk`` types.
A thin re-export of :mod:`bastion.core`; names are imported on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from bastion.core import (
        AgentCancellingEvent,
        AgentEndEvent,
        AgentErrorEvent,
        AgentEvent,
        AgentFollowUpEvent,
        AgentStartEvent,
        AgentSteeredEvent,
        AgentSuggestionsEvent,
        ContextCompactedEvent,
        ContextCompactionFailedEvent,
        FinishChunk,
        FinishReason,
        GovernanceEvent,
        GuardrailTrippedEvent,
        HandoffEvent,
        ModelCircuitEvent,
        ModelFellbackEvent,
        ModelRetryEvent,
        ReasoningChunk,
        ReasoningDeltaEvent,
        RunErrorInfo,
        RunStatus,
        StepEndEvent,
        StepStartEvent,
        StreamChunk,
        SubagentEvent,
        TextChunk,
        TextCompleteEvent,
        TextDeltaEvent,
        ToolApprovalRequestedEvent,
        ToolApprovalResolvedEvent,
        ToolCallDeltaChunk,
        ToolCallDeltaEvent,
        ToolCallEndChunk,
        ToolCallEndEvent,
        ToolCallIncompleteEvent,
        ToolCallStartChunk,
        ToolCallStartEvent,
        ToolErrorKind,
        ToolExecuteEndEvent,
        ToolExecuteErrorEvent,
        ToolExecutePartialEvent,
        ToolExecuteProgressEvent,
        ToolExecuteStartEvent,
        ToolLoopDetectedEvent,
        ToolRetryEvent,
        ToolSourceErrorEvent,
        VerifierResultEvent,
        dump_event,
        load_event,
    )

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
    "FinishChunk",
    "FinishReason",
    "GovernanceEvent",
    "GuardrailTrippedEvent",
    "HandoffEvent",
    "ModelCircuitEvent",
    "ModelFellbackEvent",
    "ModelRetryEvent",
    "ReasoningChunk",
    "ReasoningDeltaEvent",
    "RunErrorInfo",
    "RunStatus",
    "StepEndEvent",
    "StepStartEvent",
    "StreamChunk",
    "SubagentEvent",
    "TextChunk",
    "TextCompleteEvent",
    "TextDeltaEvent",
    "ToolApprovalRequestedEvent",
    "ToolApprovalResolvedEvent",
    "ToolCallDeltaChunk",
    "ToolCallDeltaEvent",
    "ToolCallEndChunk",
    "ToolCallEndEvent",
    "ToolCallIncompleteEvent",
    "ToolCallStartChunk",
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
    "dump_event",
    "load_event",
]


_NAMES = frozenset(__all__)  # every name here is bastion.core's


def __getattr__(name: str) -> Any:
    if name not in _NAMES:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module("bastion.core"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return [*globals(), *__all__]
