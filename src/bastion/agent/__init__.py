"""The agent: configuration, the run loop and its steps, results, hooks and guardrails."""

from ._agent import Agent, HookFlags
from ._binding import ApprovalMismatch
from ._config import RunConfig
from ._drive import AgentDrive, DriveDecision
from ._evaluator import EvaluatorResult, Iteration, evaluator_optimizer
from ._external import ExternalAgent, ExternalContext, ExternalOutput, external_agent
from ._fallback import (
    FALLBACK_ERRORS,
    TRANSPORT_ERRORS,
    CircuitBreaker,
    CircuitState,
    FallbackPolicy,
    OnFallback,
)
from ._fanout_stream import FanOutStream
from ._fanout_types import (
    AgentLike,
    ChildBudget,
    ChildResult,
    FanOutChild,
    FanOutChildEndEvent,
    FanOutEvent,
    FanOutMergedEvent,
    FanOutResult,
    FanOutSpawnedEvent,
)
from ._guardrails import (
    GuardrailResult,
    InputGuardrail,
    OutputGuardrail,
    input_guardrail,
    output_guardrail,
)
from ._hooks import AgentHooks, LoopHooks
from ._judge import Candidate, Judge, Pick
from ._loop_detection import LoopDetection
from ._merge import Concat, FirstSuccess
from ._merge_guard import GuardReport, MergeGuard, TrustScore
from ._options import GovernanceOptions, ToolOptions
from ._output import OutputValidationError
from ._persist import RUN_STATE_SCHEMA_VERSION, run_state_from_json, run_state_to_json
from ._result import RunResult, ToolCallRecord
from ._retry import RetryConfig, default_retryable
from ._rubrics import Evaluation, FreeForm, LLMJudge
from ._state import PendingApproval, RunState, RunStatusError, SuspendedStep
from ._step_overrides import StepOverrides
from ._stream import AgentStream
from ._team import Team, TeamMode
from ._verifiers import Verdict, Verification, VerifierCheck

__all__ = [
    "Agent",
    "AgentDrive",
    "AgentHooks",
    "AgentLike",
    "AgentStream",
    "ApprovalMismatch",
    "Candidate",
    "ChildBudget",
    "ChildResult",
    "CircuitBreaker",
    "CircuitState",
    "Concat",
    "DriveDecision",
    "Evaluation",
    "EvaluatorResult",
    "ExternalAgent",
    "ExternalContext",
    "ExternalOutput",
    "FALLBACK_ERRORS",
    "FallbackPolicy",
    "FanOutChild",
    "FanOutChildEndEvent",
    "FanOutEvent",
    "FanOutMergedEvent",
    "FanOutResult",
    "FanOutSpawnedEvent",
    "FanOutStream",
    "FirstSuccess",
    "FreeForm",
    "GovernanceOptions",
    "GuardReport",
    "GuardrailResult",
    "HookFlags",
    "InputGuardrail",
    "Iteration",
    "Judge",
    "LLMJudge",
    "LoopDetection",
    "LoopHooks",
    "MergeGuard",
    "OnFallback",
    "OutputGuardrail",
    "OutputValidationError",
    "PendingApproval",
    "Pick",
    "RUN_STATE_SCHEMA_VERSION",
    "RetryConfig",
    "RunConfig",
    "RunResult",
    "RunState",
    "RunStatusError",
    "StepOverrides",
    "SuspendedStep",
    "TRANSPORT_ERRORS",
    "Team",
    "TeamMode",
    "ToolCallRecord",
    "ToolOptions",
    "TrustScore",
    "Verdict",
    "Verification",
    "VerifierCheck",
    "default_retryable",
    "evaluator_optimizer",
    "external_agent",
    "input_guardrail",
    "output_guardrail",
    "run_state_from_json",
    "run_state_to_json",
]
