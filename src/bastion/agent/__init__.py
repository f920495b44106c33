"""The agent: configuration, the run loop and its steps, results, hooks and guardrails.

Agents composed (teams, fan-out, sub-agents, external agents, evaluator-optimizer) are
in :mod:`bastion.multi`, the layer above.
"""

from ._agent import Agent, HookFlags
from ._binding import ApprovalMismatch
from ._causality import CausalChain, Cause, causal_chain
from ._config import RunConfig
from ._drive import AgentDrive, DriveDecision
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
from ._hooks import AgentHooks, LoopHooks
from ._loop_detection import LoopDetection
from ._options import GovernanceOptions, ModelOptions, RunOptions, ToolOptions
from ._output import Output, OutputValidationError
from ._persist import RUN_STATE_SCHEMA_VERSION, run_state_from_json, run_state_to_json
from ._result import RunResult, ToolCallRecord
from ._retry import RetryConfig, default_retryable
from ._slice import BudgetSlice
from ._state import PendingApproval, RunState, RunStatusError, SuspendedStep
from ._step_overrides import StepOverrides
from ._stream import AgentStream
from ._verifiers import Verdict, Verification, VerifierCheck

__all__ = [
    "Agent",
    "AgentDrive",
    "AgentHooks",
    "AgentRegistry",
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
