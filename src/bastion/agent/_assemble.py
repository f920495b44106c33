"""``assemble``: an agent's options checked and built into its frozen :class:`RunConfig`.

``Agent(...)`` gathers its arguments into an :class:`AgentSpec` and calls :func:`assemble`;
every builder raises ``UserError`` naming the option before anything exists, so a bad
configuration has no side effect.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar

from bastion.core import Clock, Model, ModelSettings, SystemClock, UserError
from bastion.observability import ToolAudit

from ._build import (
    AgentTools,
    build_executor,
    build_guardrails,
    build_output,
    build_tiers,
    build_tools,
    check_choices,
    check_limits,
    check_runtime,
    check_tool_choice,
)
from ._capability import Capability, narrowed_catalog
from ._config import Instructions, RunConfig
from ._dataflow import apply_security
from ._extensions import ToolFactory, check_toolset, made_tools
from ._fallback import FallbackPolicy
from ._handoffs import Handoff, HandoffTarget, build_handoffs
from ._hooks import AgentHooks, LoopHooks
from ._loop_detection import check_loop_detection
from ._options import GovernanceOptions, ModelOptions, RunOptions, ToolOptions
from ._output import Output
from ._retry import RetryConfig
from ._setup import (
    HookFlags,
    build_context,
    build_governance,
    build_store,
    build_suggester,
    resolve_model,
)
from ._verifiers import Verification

if TYPE_CHECKING:
    from collections.abc import Callable

    from bastion.context import ContextConfig
    from bastion.core import Runtime
    from bastion.governance import Budget, Policy
    from bastion.security import SecurityConfig
    from bastion.stores import Stores
    from bastion.tools import Tool, ToolExecutor, ToolRegistry, ToolSet, ToolSource

    from ._catalog import ToolCatalog
    from ._governance import AgentGovernance
    from ._guardrails import InputGuardrail, OutputGuardrail
    from ._handoffs import Handoffs

__all__ = ["AgentSpec", "Assembled", "assemble"]

Hooks = AgentHooks | LoopHooks | Sequence[AgentHooks | LoopHooks] | None
"""``Agent(hooks=...)``: an observer, a loop hook, or both (one of each kind)."""

_DEFAULT_FALLBACK = FallbackPolicy()
_O = TypeVar("_O", ToolOptions, ModelOptions, RunOptions)


@dataclass(frozen=True, kw_only=True, slots=True)
class AgentSpec:
    """The arguments of ``Agent(...)``, as given (see :class:`~bastion.agent.Agent`)."""

    name: str
    model: Model | str
    instructions: Instructions
    tools: Sequence[Tool | Callable[..., Any] | ToolSource | ToolFactory]
    output_type: Any
    deps: Any
    description: str
    model_settings: ModelSettings | None
    max_steps: int
    retry: RetryConfig | None
    hooks: Hooks
    guardrails: Sequence[InputGuardrail | OutputGuardrail]
    store: Stores | str | None
    context: ContextConfig | None
    handoffs: Sequence[HandoffTarget | Handoff | str]
    budget: Budget | Sequence[Budget] | None
    policies: Sequence[Policy]
    security: SecurityConfig | None
    runtime: Runtime | None
    capability: Capability
    clock: Clock | None
    tool_options: ToolOptions | None
    governance: GovernanceOptions | None
    model_options: ModelOptions | None
    run_options: RunOptions | None


@dataclass(frozen=True, slots=True)
class Assembled:
    """What ``Agent(...)`` keeps: the run config, the tool registry and the tool audit."""

    config: RunConfig
    registry: ToolRegistry
    audit: ToolAudit


def assemble(spec: AgentSpec) -> Assembled:
    """Check ``spec`` and build the agent's config (raises ``UserError``, naming the option)."""
    name = spec.name
    if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(f"Agent name must be a non-empty string, got {name!r}.")
    if spec.model is None:  # pyright: ignore[reportUnnecessaryComparison]
        raise UserError(f"Agent {name!r} needs a model.")
    tool_opts = _option(name, "tool_options", spec.tool_options, ToolOptions)
    model_opts = _option(name, "model_options", spec.model_options, ModelOptions)
    run_opts = _option(name, "run_options", spec.run_options, RunOptions)
    _check(spec, tool_opts, model_opts, run_opts)
    model = resolve_model(spec.model, "model")
    clock = spec.clock or SystemClock()
    built = _tooling(spec, model, clock, tool_opts, models=model_opts, runs=run_opts)
    output = Output.of(spec.output_type)
    agent_hooks, loop_hooks = split_hooks(name, spec.hooks)
    inputs, outputs = build_guardrails(name, spec.guardrails)
    config = RunConfig(
        name=name,
        description=spec.description,
        model=model,
        models=(model, *(resolve_model(m, "fallback model") for m in model_opts.fallbacks)),
        instructions=spec.instructions,
        tools=built.toolset,
        catalog=built.catalog,
        tool_sources=built.parts.sources,
        executor=built.executor,
        result_limiter=built.parts.limiter,
        code_mode=built.parts.code_mode,
        hooks=agent_hooks,
        loop_hooks=loop_hooks,
        hook_flags=HookFlags.of(agent_hooks, loop_hooks),
        input_guardrails=inputs,
        output_guardrails=outputs,
        output_type=output.type,
        output_schema=build_output(
            name, output.type, output.mode, output.retries, built.parts.live
        ),
        output_mode=output.mode,
        output_retries=output.retries,
        retry=spec.retry,
        fallback_policy=model_opts.fallback_policy or _DEFAULT_FALLBACK,
        max_steps=spec.max_steps,
        on_max_steps=run_opts.on_max_steps,
        model_settings=built.settings,
        tiers=build_tiers(name, built.toolset.by_name, model_opts.tiers, model_opts.preferred),
        preferred_model=model_opts.preferred,
        reasoning_retention=model_opts.reasoning_retention,
        clock=clock,
        context=build_context(spec.context, model, name),
        context_config=spec.context,
        suggestions=build_suggester(run_opts.suggestions, model, name),
        deps=spec.deps,
        event_bus=run_opts.event_bus,
        runtime=spec.runtime,
        sandbox=tool_opts.sandbox,
        governance=built.governed,
        store=_store(spec, model_opts),
        max_concurrent_runs=run_opts.max_concurrent_runs,
        session_send_mode=run_opts.session_send_mode,
        verification=Verification.of(output.verifiers),
        loop_detection=check_loop_detection(tool_opts.loop_detection, name),
        record_responses=model_opts.record_responses,
        security=built.security,
        handoffs=built.handoffs,
    )
    return Assembled(config, built.parts.registry, built.audit)


@dataclass(frozen=True, slots=True, kw_only=True)
class _Tooling:
    """The tool side of an agent, built: its parts, tool set, executor and governance."""

    parts: AgentTools
    audit: ToolAudit
    catalog: ToolCatalog
    toolset: ToolSet
    settings: ModelSettings
    governed: AgentGovernance | None
    executor: ToolExecutor
    security: SecurityConfig | None
    handoffs: Handoffs | None


def _tooling(
    spec: AgentSpec,
    model: Model,
    clock: Clock,
    options: ToolOptions,
    *,
    models: ModelOptions,
    runs: RunOptions,
) -> _Tooling:
    name = spec.name
    audit = ToolAudit()
    handoff_tools, handoffs = build_handoffs(
        name, spec.handoffs, runs.agent_registry, runs.max_handoffs
    )
    tools = made_tools(name, spec.tools, model)
    parts = build_tools(
        name,
        [*tools, *handoff_tools] if handoff_tools else tools,
        audit=audit,
        model=model,
        options=options,
        summary_model=options.summary_model
        if options.summary_model is not None
        else (models.tiers or {}).get("fast"),
        approval=options.approval,
    )
    catalog = narrowed_catalog(name, parts.catalog, spec.capability)
    toolset = catalog.current()
    settings = spec.model_settings or ModelSettings()
    check_tool_choice(name, settings, parts.live)
    governed = build_governance(name, clock, spec.policies, spec.budget, spec.governance)
    executor = build_executor(parts, audit, clock, options, governor=governed, name=name)
    security = apply_security(name, spec.security, executor, audit.counters)
    check_toolset(name, toolset.by_name, governed)
    return _Tooling(
        parts=parts,
        audit=audit,
        catalog=catalog,
        toolset=toolset,
        settings=settings,
        governed=governed,
        executor=executor,
        security=security,
        handoffs=handoffs,
    )


def _store(spec: AgentSpec, models: ModelOptions) -> Stores | None:
    stores = build_store(spec.store, spec.name)
    if models.record_responses and stores is None:
        raise UserError(
            f"Agent {spec.name!r}: model_options.record_responses=True keeps the provider "
            "responses in the run's journal; give the agent a store (store='sqlite:///runs.db')."
        )
    return stores


def split_hooks(name: str, hooks: Hooks) -> tuple[AgentHooks | None, LoopHooks | None]:
    """``Agent(hooks=...)`` as its observer and its loop hooks (an object may be both)."""
    given: Sequence[object] = (
        () if hooks is None else hooks if isinstance(hooks, Sequence) else (hooks,)
    )
    observers = [h for h in given if isinstance(h, AgentHooks)]
    loops = [h for h in given if isinstance(h, LoopHooks)]
    strays = [h for h in given if not isinstance(h, AgentHooks | LoopHooks)]
    if strays or len(observers) > 1 or len(loops) > 1:
        raise UserError(
            f"Agent {name!r}: hooks takes an AgentHooks, a LoopHooks, or one of each "
            f"(override more methods in one subclass to do more), got {hooks!r}."
        )
    return (observers[0] if observers else None), (loops[0] if loops else None)


def _option(name: str, field: str, given: _O | None, kind: type[_O]) -> _O:
    if given is None:
        return kind()
    if not isinstance(given, kind):
        raise UserError(f"Agent {name!r}: {field} must be a {kind.__name__}, got {given!r}.")
    return given


def _check(spec: AgentSpec, tools: ToolOptions, models: ModelOptions, runs: RunOptions) -> None:
    name = spec.name
    check_limits(name, max_steps=spec.max_steps)
    check_limits(
        name,
        **{
            "tool_options.max_parallel": tools.max_parallel,
            "tool_options.event_queue_depth": tools.event_queue_depth,
            "tool_options.cache_size": tools.cache_size,
            "run_options.max_concurrent_runs": runs.max_concurrent_runs,
        },
    )
    check_runtime(name, spec.runtime, tools.sandbox)
    check_choices(
        name,
        on_max_steps=runs.on_max_steps,
        session_send_mode=runs.session_send_mode,
        reasoning_retention=models.reasoning_retention,
    )
    if not (isinstance(spec.instructions, str) or callable(spec.instructions)):
        raise UserError(f"Agent {name!r}: instructions must be a string or a function.")
    policy = models.fallback_policy
    if policy is not None and not isinstance(policy, FallbackPolicy):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"Agent {name!r}: model_options.fallback_policy must be a FallbackPolicy, "
            f"got {policy!r}."
        )
