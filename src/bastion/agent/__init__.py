"""The agent: configuration, the run loop and its steps, results, hooks and guardrails."""

from ._agent import Agent, HookFlags
from ._guardrails import (
    GuardrailResult,
    InputGuardrail,
    OutputGuardrail,
    input_guardrail,
    output_guardrail,
)
from ._hooks import AgentHooks, LoopHooks
from ._output import OutputValidationError
from ._result import RunResult, ToolCallRecord
from ._retry import RetryConfig, default_retryable
from ._state import PendingApproval, RunState
from ._stream import AgentStream

__all__ = [
    "Agent",
    "AgentHooks",
    "AgentStream",
    "GuardrailResult",
    "HookFlags",
    "InputGuardrail",
    "LoopHooks",
    "OutputGuardrail",
    "OutputValidationError",
    "PendingApproval",
    "RetryConfig",
    "RunResult",
    "RunState",
    "ToolCallRecord",
    "default_retryable",
    "input_guardrail",
    "output_guardrail",
]
