"""The named builders ``Agent(...)`` assembles its :class:`RunConfig` from.

Each builder validates what it is given and raises ``UserError`` naming the option; all of
them run before the agent exists, so a bad configuration has no side effect.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from bastion.core import Clock, Model, ModelSettings, OutputMode, Runtime, SandboxConfig, UserError
from bastion.core._runtime import check_sandbox_setting
from bastion.security import INBOUND_POLICIES
from bastion.tools import (
    ApprovalConfig,
    InboundSanitizer,
    MemoryGuard,
    ResultLimiter,
    ResultProcessor,
    ResultReader,
    SpillStore,
    Tool,
    ToolCache,
    ToolExecutor,
    ToolGate,
    ToolRegistry,
    ToolSource,
    check_tool_retry,
)
from bastion.tools._search import TOOL_SEARCH

from ._catalog import ToolCatalog
from ._guardrails import InputGuardrail, OutputGuardrail
from ._output import OUTPUT_MODES, OUTPUT_TOOL, OutputSchema
from ._setup import build_code_mode, check_positive, resolve_model
from ._sources import ToolSources, split_sources
from ._step_overrides import TOOL_CHOICE_MODES
from ._tiers import TierResolver

if TYPE_CHECKING:
    from collections.abc import Callable, Mapping, Sequence

    from typing_extensions import TypeForm

    from bastion.observability import ToolAudit
    from bastion.tools import CodeMode

    from ._governance import AgentGovernance
    from ._options import ToolOptions

__all__ = [
    "AgentTools",
    "build_executor",
    "build_guardrails",
    "build_output",
    "build_tiers",
    "build_tools",
    "check_choices",
    "check_limits",
    "check_runtime",
    "check_tool_choice",
]


def check_limits(name: str, **limits: int | None) -> None:
    """Every limit given is an integer >= 1 (``None``: no limit)."""
    for field, value in limits.items():
        if value is not None:
            check_positive(field, value, name)


def check_runtime(name: str, runtime: Runtime | None, sandbox: bool | SandboxConfig | None) -> None:
    check_sandbox_setting(sandbox, f"Agent {name!r}")
    if runtime is not None and not isinstance(runtime, Runtime):  # pyright: ignore[reportUnnecessaryIsInstance]
        raise UserError(
            f"Agent {name!r}: runtime must implement bastion.core.Runtime "
            f"(e.g. LocalRuntime('.')), got {runtime!r}."
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentTools:
    """The tool parts of an agent: registry, sources, catalog, limiter and code mode."""

    registry: ToolRegistry
    live: dict[str, Tool]
    """The registry's resolved tools (what code-mode scripts and the audit read)."""
    sources: ToolSources
    catalog: ToolCatalog
    limiter: ResultLimiter
    code_mode: CodeMode | None


def build_tools(
    name: str,
    tools: Sequence[Tool | Callable[..., object] | ToolSource],
    *,
    audit: ToolAudit,
    model: Model,
    options: ToolOptions,
    summary_model: Model | str | None,
    approval: ApprovalConfig | None,
) -> AgentTools:
    """The registry (collisions resolved), the built-in tools and the first tool set."""
    live: dict[str, Tool] = {}
    plain_tools, sources = split_sources(tools, f"Agent {name!r}")
    if sources and options.invocation == "code-mode":
        raise UserError(
            f"Agent {name!r}: tool sources (MCP servers) cannot be used with "
            "tool_options.invocation='code-mode' yet; use 'direct'."
        )
    registry = ToolRegistry(
        plain_tools,
        collision_strategy=options.collision_strategy,
        owner=f"Agent {name!r}",
        counters=audit.counters,
        into=live,
    )
    if TOOL_SEARCH in live and any(t.defer_loading for t in live.values()):
        raise UserError(
            f"Agent {name!r}: a tool is named {TOOL_SEARCH!r}, the name of the built-in search "
            "over deferred tools. Rename it, or set defer_loading=False on every tool."
        )
    limiter = ResultLimiter(
        live.values(),
        spill=SpillStore(options.spill_dir),
        summary_model=model
        if summary_model is None
        else resolve_model(summary_model, "summary_model"),
        # An MCP server reads the resources its tools link to (``mcp:<server>:<uri>``).
        result_readers=[
            *options.result_readers,
            *(s for s in sources if isinstance(s, ResultReader)),
        ],
        owner=f"Agent {name!r}",
    )
    read_result = limiter.read_result_tool()
    if read_result is not None:
        if read_result.name in live:
            raise UserError(
                f"Agent {name!r}: a tool is named {read_result.name!r}, the name of the "
                "built-in reader of stored results. Rename it."
            )
        live[read_result.name] = read_result  # adopted by the registry
    # Code mode: only code_execute and code_search are shown; the real tools stay runnable.
    mode = build_code_mode(options.invocation, options.code_mode, live, approval, name)
    catalog = ToolCatalog(
        registry, embedder=options.search_embedder, advertise=None if mode is None else mode.tools
    )
    return AgentTools(
        registry=registry,
        live=live,
        sources=ToolSources(sources, registry),
        catalog=catalog,
        limiter=limiter,
        code_mode=mode,
    )


def build_output(
    name: str,
    output_type: TypeForm[object],
    output_mode: OutputMode | None,
    output_retries: int,
    tools: Mapping[str, Tool],
) -> OutputSchema | None:
    """The schema of a typed answer (``None`` for ``str``), its mode and retries checked."""
    if output_retries < 0:
        raise UserError(f"Agent {name!r}: Output.retries must be >= 0, got {output_retries!r}.")
    schema = None if output_type is str else OutputSchema(output_type)
    if output_mode is not None and output_mode not in OUTPUT_MODES:
        raise UserError(
            f"Agent {name!r}: unknown Output.mode {output_mode!r}. "
            f"Use one of: {', '.join(repr(m) for m in OUTPUT_MODES)}."
        )
    if output_mode is not None and schema is None:
        raise UserError(
            f"Agent {name!r}: Output(mode={output_mode!r}) needs an output type other than str."
        )
    if output_mode == "tool" and OUTPUT_TOOL in tools:
        raise UserError(
            f"Agent {name!r}: Output(mode='tool') answers with a {OUTPUT_TOOL!r} tool, "
            "but one of the agent's tools has that name. Rename it."
        )
    return schema


def build_guardrails(
    name: str, guardrails: Sequence[InputGuardrail | OutputGuardrail]
) -> tuple[tuple[InputGuardrail, ...], tuple[OutputGuardrail, ...]]:
    """The input and the output guardrails, each in the order given."""
    inputs = tuple(g for g in guardrails if isinstance(g, InputGuardrail))
    outputs = tuple(g for g in guardrails if isinstance(g, OutputGuardrail))
    if len(inputs) + len(outputs) != len(guardrails):
        raise UserError(
            f"Agent {name!r}: guardrails must be made with @input_guardrail or @output_guardrail."
        )
    return inputs, outputs


def check_tool_choice(name: str, settings: ModelSettings, tools: Mapping[str, Tool]) -> None:
    choice = settings.tool_choice
    if choice not in (None, *TOOL_CHOICE_MODES) and choice not in tools:
        raise UserError(
            f"Agent {name!r}: model_settings.tool_choice={choice!r} is not one of its "
            f"tools. Use 'auto', 'required', 'none' or one of: "
            f"{', '.join(repr(t) for t in tools) or '(no tools)'}."
        )


def build_tiers(
    name: str,
    tools: Mapping[str, Tool],
    tier_map: Mapping[str, Model | str] | None,
    preferred_model: str | None,
) -> TierResolver | None:
    """The tier resolver when any tool or the agent prefers a model (else ``None``)."""
    hints = [(f"Tool {t.name!r}", t.preferred_model) for t in tools.values()]
    hints.append((f"Agent {name!r}", preferred_model))
    wanted = [(owner, hint) for owner, hint in hints if hint is not None]
    return TierResolver(tier_map or {}, wanted) if wanted or tier_map else None


def build_executor(
    parts: AgentTools,
    audit: ToolAudit,
    clock: Clock,
    options: ToolOptions,
    *,
    governor: AgentGovernance | None,
    name: str,
) -> ToolExecutor:
    """The executor: the gate, sanitisation then result limits, the cache."""
    inbound = options.inbound_sanitization
    if inbound is not None and inbound not in INBOUND_POLICIES:
        raise UserError(
            f"Agent {name!r}: unknown tool_options.inbound_sanitization {inbound!r}. "
            f"Use one of: {', '.join(repr(p) for p in INBOUND_POLICIES)}."
        )
    # Sanitisation first: it must see the whole body before any limit cuts it.
    processors: list[ResultProcessor] = [
        InboundSanitizer(override=inbound, counters=audit.counters),
        parts.limiter,  # keep last: limits apply to the screened body
    ]
    executor = ToolExecutor(
        parts.live,
        max_parallel=options.max_parallel,
        clock=clock,
        gate=ToolGate(
            deny_tools=options.deny,
            before_tool_call=options.before_call,
            repair=options.repair,
            approval=options.approval,
            governor=governor,  # stage 0 of the gate
        ),
        processors=processors,
        audit=audit,
        cancel_grace=options.cancel_grace,
        cache=ToolCache(clock, max_entries=options.cache_size, counters=audit.counters),
        event_queue_depth=options.event_queue_depth,
        retry=check_tool_retry(options.retry, f"Agent {name!r}: tool_options"),
        memory_guard=_memory_guard(options.memory_guard, name),
    )
    if parts.code_mode is not None:
        parts.code_mode.bind(executor)
    return executor


def _memory_guard(guard: object, name: str) -> MemoryGuard | None:
    if guard is not None and not isinstance(guard, MemoryGuard):
        raise UserError(
            f"Agent {name!r}: tool_options.memory_guard must be a MemoryGuard, got {guard!r}."
        )
    return guard


def check_choices(
    name: str,
    *,
    on_max_steps: str,
    session_send_mode: str,
    reasoning_retention: str,
) -> None:
    """The options that take one of a few words."""
    if on_max_steps not in ("fail", "return"):
        raise UserError(f"Agent {name!r}: run_options.on_max_steps must be 'fail' or 'return'.")
    if session_send_mode not in ("steer", "queue"):
        raise UserError(
            f"Agent {name!r}: run_options.session_send_mode must be 'steer' or 'queue', "
            f"got {session_send_mode!r}."
        )
    if reasoning_retention not in ("keep", "strip"):
        raise UserError(
            f"Agent {name!r}: model_options.reasoning_retention must be 'keep' or 'strip'."
        )
