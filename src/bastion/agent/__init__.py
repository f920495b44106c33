"""The agent: configuration, the run loop and its steps, results, hooks and guardrails.

Agents composed (teams, fan-out, sub-agents, external agents, evaluator-optimizer) are
in :mod:`bastion.multi`, the layer above.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

if TYPE_CHECKING:
    from ._agent import (
        Agent,
    )
    from ._agent_like import AgentLike, AgentRunHandle
    from ._binding import (
        ApprovalMismatch,
    )
    from ._causality import (
        CausalChain,
        Cause,
        causal_chain,
    )
    from ._config import (
        RunConfig,
    )
    from ._drive import (
        AgentDrive,
        DriveDecision,
    )
    from ._fallback import (
        FALLBACK_ERRORS,
        TRANSPORT_ERRORS,
        CircuitBreaker,
        CircuitState,
        FallbackPolicy,
        OnFallback,
    )
    from ._guardrails import (
        GuardrailResult,
        InputGuardrail,
        OutputGuardrail,
        input_guardrail,
        output_guardrail,
    )
    from ._handoffs import (
        AgentRegistry,
        Handoff,
        HandoffError,
        HandoffLimitExceeded,
        UnknownHandoffTarget,
        handoff,
        handoff_of,
    )
    from ._hooks import (
        AgentHooks,
        LoopHooks,
    )
    from ._loop_detection import (
        LoopDetection,
    )
    from ._options import (
        GovernanceOptions,
        ModelOptions,
        RunOptions,
        ToolOptions,
    )
    from ._output import (
        Output,
        OutputValidationError,
    )
    from ._persist import (
        RUN_STATE_SCHEMA_VERSION,
        run_state_from_json,
        run_state_to_json,
    )
    from ._result import (
        RunResult,
        ToolCallRecord,
    )
    from ._retry import (
        RetryConfig,
        default_retryable,
    )
    from ._setup import (
        HookFlags,
    )
    from ._slice import (
        BudgetSlice,
    )
    from ._state import (
        PendingApproval,
        RunState,
        RunStatusError,
        SuspendedStep,
    )
    from ._step_overrides import (
        StepOverrides,
    )
    from ._stream import (
        AgentStream,
    )
    from ._verifiers import (
        Verdict,
        Verification,
        VerifierCheck,
    )

_LAZY = {
    "Agent": "._agent",
    "AgentLike": "._agent_like",
    "AgentRunHandle": "._agent_like",
    "HookFlags": "._setup",
    "ApprovalMismatch": "._binding",
    "CausalChain": "._causality",
    "Cause": "._causality",
    "causal_chain": "._causality",
    "RunConfig": "._config",
    "AgentDrive": "._drive",
    "DriveDecision": "._drive",
    "FALLBACK_ERRORS": "._fallback",
    "TRANSPORT_ERRORS": "._fallback",
    "CircuitBreaker": "._fallback",
    "CircuitState": "._fallback",
    "FallbackPolicy": "._fallback",
    "OnFallback": "._fallback",
    "GuardrailResult": "._guardrails",
    "InputGuardrail": "._guardrails",
    "OutputGuardrail": "._guardrails",
    "input_guardrail": "._guardrails",
    "output_guardrail": "._guardrails",
    "AgentRegistry": "._handoffs",
    "Handoff": "._handoffs",
    "HandoffError": "._handoffs",
    "HandoffLimitExceeded": "._handoffs",
    "UnknownHandoffTarget": "._handoffs",
    "handoff": "._handoffs",
    "handoff_of": "._handoffs",
    "AgentHooks": "._hooks",
    "LoopHooks": "._hooks",
    "LoopDetection": "._loop_detection",
    "GovernanceOptions": "._options",
    "ModelOptions": "._options",
    "RunOptions": "._options",
    "ToolOptions": "._options",
    "Output": "._output",
    "OutputValidationError": "._output",
    "RUN_STATE_SCHEMA_VERSION": "._persist",
    "run_state_from_json": "._persist",
    "run_state_to_json": "._persist",
    "RunResult": "._result",
    "ToolCallRecord": "._result",
    "RetryConfig": "._retry",
    "default_retryable": "._retry",
    "BudgetSlice": "._slice",
    "PendingApproval": "._state",
    "RunState": "._state",
    "RunStatusError": "._state",
    "SuspendedStep": "._state",
    "StepOverrides": "._step_overrides",
    "AgentStream": "._stream",
    "Verdict": "._verifiers",
    "Verification": "._verifiers",
    "VerifierCheck": "._verifiers",
}

__all__ = [
    "Agent",
    "AgentDrive",
    "AgentHooks",
    "AgentLike",
    "AgentRegistry",
    "AgentRunHandle",
    "AgentStream",
    "ApprovalMismatch",
    "BudgetSlice",
    "CausalChain",
    "Cause",
    "CircuitBreaker",
    "CircuitState",
    "DriveDecision",
    "FALLBACK_ERRORS",
    "FallbackPolicy",
    "GovernanceOptions",
    "GuardrailResult",
    "Handoff",
    "HandoffError",
    "HandoffLimitExceeded",
    "HookFlags",
    "InputGuardrail",
    "LoopDetection",
    "LoopHooks",
    "ModelOptions",
    "OnFallback",
    "Output",
    "OutputGuardrail",
    "OutputValidationError",
    "PendingApproval",
    "RUN_STATE_SCHEMA_VERSION",
    "RetryConfig",
    "RunConfig",
    "RunOptions",
    "RunResult",
    "RunState",
    "RunStatusError",
    "StepOverrides",
    "SuspendedStep",
    "TRANSPORT_ERRORS",
    "ToolCallRecord",
    "ToolOptions",
    "UnknownHandoffTarget",
    "Verdict",
    "Verification",
    "VerifierCheck",
    "causal_chain",
    "default_retryable",
    "handoff",
    "handoff_of",
    "input_guardrail",
    "output_guardrail",
    "run_state_from_json",
    "run_state_to_json",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
