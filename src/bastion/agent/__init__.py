"""The agent: configuration, the run loop and its steps, results, hooks and guardrails.

The multi-agent names (fan-out, merges, teams, external agents, evaluator-optimizer) are
imported on first use, so ``from bastion import Agent`` does not load them.
"""

from typing import TYPE_CHECKING

from bastion._lazy import lazy_attributes

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
from ._options import GovernanceOptions, ToolOptions
from ._output import OutputValidationError
from ._persist import RUN_STATE_SCHEMA_VERSION, run_state_from_json, run_state_to_json
from ._result import RunResult, ToolCallRecord
from ._retry import RetryConfig, default_retryable
from ._slice import BudgetSlice
from ._state import PendingApproval, RunState, RunStatusError, SuspendedStep
from ._step_overrides import StepOverrides
from ._stream import AgentStream
from ._task import SubagentSpec
from ._verifiers import Verdict, Verification, VerifierCheck

if TYPE_CHECKING:
    from ._evaluator import EvaluatorResult, Iteration, evaluator_optimizer
    from ._external import ExternalAgent, ExternalContext, ExternalOutput, external_agent
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
    from ._judge import Candidate, Judge, Pick
    from ._merge import Concat, FirstSuccess
    from ._merge_guard import GuardReport, MergeGuard, TrustScore
    from ._rubrics import Evaluation, FreeForm, LLMJudge
    from ._team import Team, TeamMode

_LAZY = {
    "EvaluatorResult": "._evaluator",
    "Iteration": "._evaluator",
    "evaluator_optimizer": "._evaluator",
    "ExternalAgent": "._external",
    "ExternalContext": "._external",
    "ExternalOutput": "._external",
    "external_agent": "._external",
    "FanOutStream": "._fanout_stream",
    "AgentLike": "._fanout_types",
    "ChildBudget": "._fanout_types",
    "ChildResult": "._fanout_types",
    "FanOutChild": "._fanout_types",
    "FanOutChildEndEvent": "._fanout_types",
    "FanOutEvent": "._fanout_types",
    "FanOutMergedEvent": "._fanout_types",
    "FanOutResult": "._fanout_types",
    "FanOutSpawnedEvent": "._fanout_types",
    "Candidate": "._judge",
    "Judge": "._judge",
    "Pick": "._judge",
    "Concat": "._merge",
    "FirstSuccess": "._merge",
    "GuardReport": "._merge_guard",
    "MergeGuard": "._merge_guard",
    "TrustScore": "._merge_guard",
    "Evaluation": "._rubrics",
    "FreeForm": "._rubrics",
    "LLMJudge": "._rubrics",
    "Team": "._team",
    "TeamMode": "._team",
}

__all__ = [
    "Agent",
    "AgentDrive",
    "AgentHooks",
    "AgentLike",
    "AgentRegistry",
    "AgentStream",
    "ApprovalMismatch",
    "BudgetSlice",
    "Candidate",
    "CausalChain",
    "Cause",
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
    "Handoff",
    "HandoffError",
    "HandoffLimitExceeded",
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
    "SubagentSpec",
    "SuspendedStep",
    "TRANSPORT_ERRORS",
    "Team",
    "TeamMode",
    "ToolCallRecord",
    "ToolOptions",
    "TrustScore",
    "UnknownHandoffTarget",
    "Verdict",
    "Verification",
    "VerifierCheck",
    "causal_chain",
    "default_retryable",
    "evaluator_optimizer",
    "external_agent",
    "handoff",
    "handoff_of",
    "input_guardrail",
    "output_guardrail",
    "run_state_from_json",
    "run_state_to_json",
]


__getattr__ = lazy_attributes(__name__, _LAZY)
