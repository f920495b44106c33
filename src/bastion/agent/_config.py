"""``RunConfig``: everything a run reads of its agent, frozen, built once by ``Agent(...)``.

The steps of the loop read the run's config (``scope.config``), never the ``Agent`` object.
An agent's variants (``with_model``, ``with_store``, a sub-agent under its parent, a
session's run) are made with :func:`dataclasses.replace` on the config; nothing is mutated.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from bastion.core import (
    Clock,
    EventBus,
    Model,
    ModelSettings,
    OutputMode,
    RunContext,
    Runtime,
    SandboxConfig,
)

if TYPE_CHECKING:
    from typing_extensions import TypeForm

    from bastion.context import ContextConfig
    from bastion.security import SecurityConfig
    from bastion.stores import Stores
    from bastion.tools import CodeMode, ResultLimiter, ToolExecutor, ToolSet

    from ._catalog import ToolCatalog
    from ._context import ContextKeeper
    from ._fallback import FallbackPolicy
    from ._governance import AgentGovernance
    from ._guardrails import InputGuardrail, OutputGuardrail
    from ._handoffs import Handoffs
    from ._hooks import AgentHooks, LoopHooks
    from ._loop_detection import LoopDetection
    from ._output import OutputSchema
    from ._retry import RetryConfig
    from ._setup import HookFlags
    from ._slice import BudgetSlice
    from ._sources import ToolSources
    from ._suggest import Suggester
    from ._tiers import TierResolver
    from ._verifiers import Verification

__all__ = ["Instructions", "RunConfig"]

Instructions = str | Callable[[RunContext[Any]], "str | Awaitable[str]"]


@dataclass(frozen=True, kw_only=True, slots=True)
class RunConfig:
    """What a run of an agent reads: models, instructions, tools, hooks and limits.

    Read it as ``agent.config``; derive a variant with ``dataclasses.replace`` and run it
    with ``agent.stream(..., config=variant)``. ``tools`` is the tool set when the config
    was taken; a run takes the current one from ``catalog`` at every step.
    """

    name: str
    description: str = ""
    model: Model
    models: tuple[Model, ...]
    """``model`` first, then the fallback models, in order."""
    instructions: Instructions = ""
    tools: ToolSet
    catalog: ToolCatalog
    tool_sources: ToolSources
    executor: ToolExecutor
    result_limiter: ResultLimiter
    code_mode: CodeMode | None = None
    hooks: AgentHooks | None = None
    loop_hooks: LoopHooks | None = None
    hook_flags: HookFlags
    input_guardrails: tuple[InputGuardrail, ...] = ()
    output_guardrails: tuple[OutputGuardrail, ...] = ()
    output_type: TypeForm[object] = str
    output_schema: OutputSchema | None = None
    output_mode: OutputMode | None = None
    output_retries: int = 1
    retry: RetryConfig | None = None
    fallback_policy: FallbackPolicy
    max_steps: int = 50
    on_max_steps: Literal["fail", "return"] = "fail"
    model_settings: ModelSettings
    tiers: TierResolver | None = None
    preferred_model: str | None = None
    reasoning_retention: Literal["keep", "strip"] = "keep"
    clock: Clock
    context: ContextKeeper | None = None
    context_config: ContextConfig | None = None
    deps: object = None
    event_bus: EventBus | None = None
    runtime: Runtime | None = None
    sandbox: bool | SandboxConfig | None = None
    governance: AgentGovernance | None = None
    store: Stores | None = None
    max_concurrent_runs: int | None = None
    session_send_mode: Literal["steer", "queue"] = "steer"
    verification: Verification | None = None
    """Checks of the final answer, and how many feedback rounds they may ask for."""
    loop_detection: LoopDetection | None = None
    suggestions: Suggester | None = None
    """Follow-up suggestions after a completed run (``None``: off)."""
    record_responses: bool = False
    """Whether runs keep their model responses, chunk by chunk, for replay."""
    security: SecurityConfig | None = None
    """The data-flow policy and the secrets vault (``None``: neither)."""
    handoffs: Handoffs | None = None
    """The agents this one may hand the conversation to (``None``: none)."""
    handoff_gate: Callable[[ToolExecutor], ToolExecutor] | None = None
    """Applied to a handoff target's executor: a driven run (``Agent.drive``) asks the
    application about the target's tool calls too."""
    allowance: BudgetSlice | None = None
    """What a sub-agent's run may spend, as its parent granted it (``None``: no slice)."""
