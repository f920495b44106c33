"""``Agent``: a reusable, validated definition of an agent, and the entry points of a run.

An ``Agent`` holds configuration only; every run gets its own state, so one agent serves
many concurrent runs (bounded by ``max_concurrent_runs`` when set).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import weakref
from contextlib import aclosing
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Literal

from bastion.core import (
    AgentEndEvent,
    AgentEvent,
    Clock,
    EventBus,
    Message,
    Model,
    ModelSettings,
    OutputMode,
    RunContext,
    Runtime,
    SandboxConfig,
    SystemClock,
    ToolDefinition,
    UserError,
    UserPart,
    new_id,
)
from bastion.core._context import DepsT
from bastion.observability import ToolAudit

from ._build import (
    GateOptions,
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
from ._drive import AgentDrive, start_drive
from ._extensions import ToolFactory, check_toolset, made_tools
from ._fallback import FallbackPolicy
from ._handoffs import AgentRegistry, Handoff, HandoffTarget, build_handoffs, find_agent
from ._input import check_history, check_user_input
from ._journal import RunJournal
from ._loop import run_loop
from ._loop_detection import LoopDetection, check_loop_detection
from ._options import GovernanceOptions, ToolOptions
from ._ownership import check_session_owner, run_keeper
from ._persist import run_state_from_json, run_state_to_json
from ._progress import Progress, memory_stores
from ._replay import load_run
from ._result import OutputT, RunResult
from ._retry import RetryConfig
from ._scope import ANCESTRY, GRAPH, INVOCATION, RunScope
from ._setup import (
    HookFlags,
    build_context,
    build_governance,
    build_store,
    build_suggester,
    resolve_model,
)
from ._state import RunState
from ._stream import AgentStream, check_capacity
from ._verifiers import Verification, VerifierLike
from .steps._approvals import check_directive
from .steps._handoff import activate

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Mapping, Sequence

    from bastion.context import Compaction, ContextConfig, Suggestions
    from bastion.governance import Budget, Policy
    from bastion.security import SecurityConfig
    from bastion.sessions import Session
    from bastion.stores import Stores
    from bastion.tools import (
        ApprovalConfig,
        BeforeToolCall,
        CodeMode,
        Directive,
        RepairHook,
        ResultLimiter,
        Tool,
        ToolExecutor,
        ToolSource,
    )

    from ._context import ContextKeeper
    from ._governance import AgentGovernance
    from ._guardrails import InputGuardrail, OutputGuardrail
    from ._hooks import AgentHooks, LoopHooks, SessionLink
    from ._sources import ToolSources

__all__ = ["Agent", "HookFlags"]

_DEFAULT_RETRY = RetryConfig()
_DEFAULT_TOOL_OPTIONS = ToolOptions()
_DEFAULT_FALLBACK = FallbackPolicy()


class Agent(Generic[DepsT, OutputT]):
    """An LLM agent: a model, instructions and tools, run as a loop that streams events.

    Example::

        agent = Agent("assistant", model=model, instructions="Be brief.", tools=[add])
        result = await agent.run("What is 2 + 3?")
        print(result.output)

    The options are checked and assembled once into a frozen :class:`RunConfig`
    (:attr:`config`), which is all a run reads; variants (``with_model``, a run's
    ``config=``) are derived from it with :func:`dataclasses.replace`.

    Args:
        name: Non-empty name, used in events, traces and as the ``agent:<name>`` key.
        model: A :class:`~bastion.core.Model`, or a ``"provider:model"`` string.
        instructions: The system prompt, or a function of the ``RunContext`` (sync or
            async) resolved once per run. Empty: no system message.
        tools: Tools, plain functions (made into tools with :func:`bastion.tool`), and
            tool sources such as MCP servers (``bastion.mcp.MCPServer``): a source is asked
            for its tools before every model call, so its list may change while the agent
            lives. Close the agent (``async with agent:`` or :meth:`aclose`) to stop them.
            A tool factory (``bastion.multi.subagents({...})``) makes its tools here.
        output_type: ``str`` (default) or any type pydantic validates (a model, a
            dataclass, ``list[int]``, …); the answer is parsed into it.
        output_retries: How often an answer that does not parse is sent back for a fix.
        output_mode: How the typed answer is asked for: ``native`` (the vendor's JSON-schema
            mode), ``prompted`` (JSON mode, the schema in the system prompt) or ``tool``
            (a ``final_result`` tool whose arguments are the answer). ``None`` (default):
            what each step's model prefers, from its profile (``Model.output_mode``).
        hooks: Observers of the run (:class:`AgentHooks`).
        loop_hooks: Decision points in the loop (:class:`LoopHooks`).
        guardrails: Input and output guardrails, in the order they run.
        retry: Retry of transient model errors; ``None`` disables retrying.
        fallback_models: Models to try, in order, when a step fails on rate limits,
            capacity or context length (or the errors ``fallback_policy`` names).
        fallback_policy: Which errors move a step to the next fallback model, a circuit
            breaker that skips models failing repeatedly, and an ``on_fallback`` hook
            (:class:`FallbackPolicy`).
        max_steps: Most model calls in one run (alias of "max tool round trips").
        on_max_steps: ``fail`` (status ``failed``, code ``stop_condition``) or ``return``
            (status ``stopped`` with the last answer).
        max_parallel_tools: How many tool calls of one step may run at once.
        model_settings: Sampling settings for every call.
        deps: Default dependencies, given to tools as ``ctx.deps`` (``Lazy`` values are
            made once per run).
        description: What the agent does, for humans and for other agents.
        clock: The clock (``bastion.testing.VirtualClock`` in tests).
        max_concurrent_runs: Limit on runs in flight at once (``None``: unlimited).
        event_bus: Observers fed every event of every run (``EventBus``).
        reasoning_retention: ``keep`` sends earlier reasoning (with its signatures) back
            to the model on the next step, as tool-use loops need; ``strip`` leaves it out.
        model_tier_map: Models for the tiers ``fast``, ``balanced`` and ``smart`` that
            tools (``tool(preferred_model=...)``) and the agent may prefer.
        preferred_model: A tier or ``"provider:model"`` the agent prefers over ``model``
            when no tool hint applies (SPEC G-85 precedence).
        approval: How calls needing approval are decided: a callback, or (by default)
            suspending the run with status ``awaiting_approval`` until a
            :class:`~bastion.tools.Directive` resumes it.
        before_tool_call: Hooks deciding per call, in order (first decision wins):
            ``Allow()``, ``Deny(reason)``, ``Rewrite(arguments)``, ``Mock(result)``,
            ``Ask()``, or ``None`` for no opinion.
        repair_tool_call: Given a call with invalid arguments and the validation error,
            returns repaired arguments (JSON text or a dict) or ``None``; one round.
        deny_tools: Name patterns (``fnmatch``) of tools that may never run in this agent.
        tool_options: How the tools are named, screened, limited, cached and invoked
            (:class:`ToolOptions`: collision strategy, inbound sanitisation, cancel grace,
            event queue depth, cache size, ``tool_search`` embedder, code mode, spill
            directory, summary model, result readers).
        policies: Global governance policies (``bastion.governance``), judging every model
            call (``llm:<provider>:<model>``) and tool call (``tool:<name>``).
        budget: Cost budget(s) on model calls (``Budget(cost_usd=10, window="day")``);
            ``window="invocation"`` stops the run cleanly (status ``stopped``, reason
            ``budget``) when it is spent.
        governance: The less common governance settings (:class:`GovernanceOptions`:
            per-key ``oracles``, ``handle_interrupt``, a shared ``governor``, which
            ``events`` the stream carries). A shared governor is exclusive with
            ``policies``, ``budget``, ``oracles`` and ``handle_interrupt``.
        store: Where runs are journaled (``bastion.stores``: a ``Stores``, or a URL such
            as ``"sqlite:///runs.db"``). Every model response, tool start and tool result
            is journaled (in batches; always before a tool runs, before a human is asked and
            before the run ends), so :meth:`resume` continues the run in any process sharing
            the store without repeating a journaled model call or tool call.
            ``None`` (default): nothing is journaled.
        session_send_mode: The default ``mode`` of ``send()`` in this agent's sessions
            (:meth:`session`): ``steer`` or ``queue``; a session's ``send_mode`` and a
            call's ``mode`` override it.
        context: Keep conversations inside the model's context window
            (:class:`~bastion.context.ContextConfig`: compaction strategy, trigger, summarizer).
            ``None`` (default): the history is sent as it is.
        suggestions: After each completed run, ask a model for what the user may say
            next (:class:`~bastion.context.Suggestions`: how many, which model; default
            the agent's). The ``agent.suggestions`` event and ``result.suggestions`` carry
            them; the call is governed and counted in the run's usage. Off by default.
        runtime: Where tools run commands and touch files, as ``ctx.runtime``
            (``bastion.runtimes.LocalRuntime`` or ``SandboxRuntime``; the built-in
            ``bash`` and file tools need one). ``None``: tools have no runtime.
        sandbox: The sandbox of tools that do not choose their own ``sandbox=``: a
            :class:`~bastion.core.SandboxConfig`, ``True`` (the defaults) or ``False`` /
            ``None`` (none). A tool's own setting wins; ``False`` on a tool turns it off.
        verifiers: Checks of the final answer (functions of ``(ctx, output)`` or objects
            with ``verify``), or a :class:`Verification` with a round cap; a failing one
            sends its feedback to the model, which answers again.
        loop_detection: What happens when the model calls one tool with identical
            arguments again and again: ``LoopDetection()`` warns the model on the third
            such call, in that call's result (:class:`LoopDetection`). ``None`` (default):
            not checked.
        record_responses: Also keep each model response as the provider streamed it
            (every chunk) in the journal, so ``bastion.testing.ReplayModel`` can replay
            the run without calling the model. Needs a ``store``. Default ``False``.
        security: A :class:`~bastion.security.SecurityConfig`: the data-flow policy checked
            before every sink call (tool outputs then carry provenance) and the secrets
            vault tools reveal from (``secrets_allowed``). See ``docs/security.md``.
        handoffs: Agents this one may hand the conversation to: agents, their names (looked
            up in ``agent_registry`` when the transfer happens) or :func:`handoff` specs.
            Each is advertised as a ``transfer_to_<name>`` tool; calling it makes the target
            the run's active agent (its instructions, tools and model), with the history
            its input filter keeps. See ``docs/multi-agent.md``.
        max_handoffs: Most handoffs one run may make before this agent's next one fails
            the run (code ``max_handoffs``). Default 10.
        agent_registry: Where targets named by a string are found (and where a resuming
            process finds the active agent of a run).
        capability: ``read_only``: the agent's tools that may change something (and
            handoffs) are not shown to its model, and a call to one is refused
            (``capability_blocked``). ``full`` (default): all its tools. A parent can
            also narrow a sub-agent with ``bastion.multi.as_tool(agent, capability=...)``.

    Raises:
        UserError: The configuration is invalid (nothing has been run).
    """

    def __init__(
        self,
        name: str,
        *,
        model: Model | str,
        instructions: Instructions = "",
        tools: Sequence[Tool | Callable[..., Any] | ToolSource | ToolFactory] = (),
        output_type: type[OutputT] | Any = str,
        output_retries: int = 1,
        output_mode: OutputMode | None = None,
        hooks: AgentHooks | None = None,
        loop_hooks: LoopHooks | None = None,
        guardrails: Sequence[InputGuardrail | OutputGuardrail] = (),
        retry: RetryConfig | None = _DEFAULT_RETRY,
        fallback_models: Sequence[Model | str] = (),
        fallback_policy: FallbackPolicy | None = None,
        max_steps: int = 50,
        on_max_steps: Literal["fail", "return"] = "fail",
        max_parallel_tools: int = 8,
        model_settings: ModelSettings | None = None,
        deps: DepsT | None = None,
        description: str = "",
        clock: Clock | None = None,
        max_concurrent_runs: int | None = None,
        event_bus: EventBus | None = None,
        reasoning_retention: Literal["keep", "strip"] = "keep",
        model_tier_map: Mapping[str, Model | str] | None = None,
        preferred_model: str | None = None,
        approval: ApprovalConfig | None = None,
        before_tool_call: Sequence[BeforeToolCall] = (),
        repair_tool_call: RepairHook | None = None,
        deny_tools: Sequence[str] = (),
        tool_options: ToolOptions | None = None,
        policies: Sequence[Policy] = (),
        budget: Budget | Sequence[Budget] | None = None,
        governance: GovernanceOptions | None = None,
        store: Stores | str | None = None,
        session_send_mode: Literal["steer", "queue"] = "steer",
        context: ContextConfig | None = None,
        suggestions: Suggestions | None = None,
        runtime: Runtime | None = None,
        sandbox: bool | SandboxConfig | None = None,
        verifiers: Verification | Sequence[VerifierLike] = (),
        loop_detection: LoopDetection | None = None,
        record_responses: bool = False,
        security: SecurityConfig | None = None,
        handoffs: Sequence[HandoffTarget | Handoff | str] = (),
        max_handoffs: int = 10,
        agent_registry: AgentRegistry | None = None,
        capability: Capability = "full",
    ) -> None:
        if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"Agent name must be a non-empty string, got {name!r}.")
        if model is None:  # pyright: ignore[reportUnnecessaryComparison]
            raise UserError(f"Agent {name!r} needs a model.")
        options = _DEFAULT_TOOL_OPTIONS if tool_options is None else tool_options
        if not isinstance(options, ToolOptions):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"Agent {name!r}: tool_options must be a ToolOptions, got {options!r}.")
        check_limits(
            name,
            max_steps=max_steps,
            max_parallel_tools=max_parallel_tools,
            max_concurrent_runs=max_concurrent_runs,
        )
        check_limits(
            name,
            **{
                "tool_options.event_queue_depth": options.event_queue_depth,
                "tool_options.cache_size": options.cache_size,
            },
        )
        check_runtime(name, runtime, sandbox)
        check_choices(
            name,
            on_max_steps=on_max_steps,
            session_send_mode=session_send_mode,
            reasoning_retention=reasoning_retention,
        )
        if not (isinstance(instructions, str) or callable(instructions)):
            raise UserError(f"Agent {name!r}: instructions must be a string or a function.")
        if fallback_policy is not None and not isinstance(fallback_policy, FallbackPolicy):
            raise UserError(
                f"Agent {name!r}: fallback_policy must be a FallbackPolicy, "
                f"got {fallback_policy!r}."
            )
        resolved = resolve_model(model, "model")
        models = (resolved, *(resolve_model(m, "fallback model") for m in fallback_models))
        clock = clock or SystemClock()
        audit = ToolAudit()
        handoff_tools, handoff_config = build_handoffs(name, handoffs, agent_registry, max_handoffs)
        tools = made_tools(name, tools, resolved)
        parts = build_tools(
            name,
            [*tools, *handoff_tools] if handoff_tools else tools,
            audit=audit,
            model=resolved,
            options=options,
            summary_model=options.summary_model
            if options.summary_model is not None
            else (model_tier_map or {}).get("fast"),
            approval=approval,
        )
        catalog = narrowed_catalog(name, parts.catalog, capability)
        toolset = catalog.current()
        output_schema = build_output(name, output_type, output_mode, output_retries, parts.live)
        input_guardrails, output_guardrails = build_guardrails(name, guardrails)
        settings = model_settings or ModelSettings()
        check_tool_choice(name, settings, parts.live)
        governed = build_governance(name, clock, policies, budget, governance)
        executor = build_executor(
            parts,
            audit,
            clock,
            GateOptions(
                deny_tools=deny_tools,
                before_tool_call=before_tool_call,
                repair=repair_tool_call,
                approval=approval,
            ),
            max_parallel=max_parallel_tools,
            options=options,
            governor=governed,
            name=name,
        )
        security = apply_security(name, security, executor, audit.counters)
        check_toolset(name, toolset.by_name, governed)
        stores = build_store(store, name)
        if record_responses and stores is None:
            raise UserError(
                f"Agent {name!r}: record_responses=True keeps the provider responses in "
                "the run's journal; give the agent a store (store='sqlite:///runs.db')."
            )
        config = RunConfig(
            name=name,
            description=description,
            model=resolved,
            models=models,
            instructions=instructions,
            tools=toolset,
            catalog=catalog,
            tool_sources=parts.sources,
            executor=executor,
            result_limiter=parts.limiter,
            code_mode=parts.code_mode,
            hooks=hooks,
            loop_hooks=loop_hooks,
            hook_flags=HookFlags.of(hooks, loop_hooks),
            input_guardrails=input_guardrails,
            output_guardrails=output_guardrails,
            output_type=output_type,
            output_schema=output_schema,
            output_mode=output_mode,
            output_retries=output_retries,
            retry=retry,
            fallback_policy=fallback_policy or _DEFAULT_FALLBACK,
            max_steps=max_steps,
            on_max_steps=on_max_steps,
            model_settings=settings,
            tiers=build_tiers(name, toolset.by_name, model_tier_map, preferred_model),
            preferred_model=preferred_model,
            reasoning_retention=reasoning_retention,
            clock=clock,
            context=build_context(context, resolved, name),
            context_config=context,
            suggestions=build_suggester(suggestions, resolved, name),
            deps=deps,
            event_bus=event_bus,
            runtime=runtime,
            sandbox=sandbox,
            governance=governed,
            store=stores,
            max_concurrent_runs=max_concurrent_runs,
            session_send_mode=session_send_mode,
            verification=Verification.of(verifiers),
            loop_detection=check_loop_detection(loop_detection, name),
            record_responses=record_responses,
            security=security,
            handoffs=handoff_config,
        )
        self.registry = parts.registry
        """The agent's tools by name; ``registry.register(tool)`` adds one for later steps."""
        self.audit = audit
        self._adopt(config, owns_store=isinstance(store, str))

    def _adopt(
        self,
        config: RunConfig,
        *,
        owns_store: bool,
        live: weakref.WeakSet[AgentStream[Any]] | None = None,
    ) -> None:
        """Take ``config`` as this agent's (a new agent, or a variant of another)."""
        self._config = config
        self._live: weakref.WeakSet[AgentStream[Any]] = weakref.WeakSet() if live is None else live
        self._owns_store = owns_store
        self._store_ready = False
        self._progress_stores: Stores | None = None
        self.progress = Progress(self._artifact_stores, config.name)
        """Progress artifacts in the agent's store (in memory when it has none)."""

    def _derive(self, config: RunConfig, *, owns_store: bool = False) -> Agent[DepsT, OutputT]:
        """A variant of this agent running ``config`` (its registry and audit shared)."""
        clone: Agent[DepsT, OutputT] = object.__new__(type(self))
        clone.registry = self.registry
        clone.audit = self.audit
        clone._adopt(config, owns_store=owns_store)
        return clone

    @property
    def config(self) -> RunConfig:
        """What a run of this agent reads (frozen); its ``tools`` are the current tool set.

        Derive a variant with ``dataclasses.replace`` and run it with
        ``agent.stream(..., config=variant)``.
        """
        config = self._config
        current = config.catalog.current()
        if current is not config.tools:  # the registry changed: a new tool set
            config = self._config = replace(config, tools=current)
        return config

    @property
    def name(self) -> str:
        """The agent's name (events, traces, the ``agent:<name>`` key)."""
        return self._config.name

    @property
    def description(self) -> str:
        """What the agent does, for humans and for other agents."""
        return self._config.description

    @property
    def model(self) -> Model:
        """The model of every step (unless a tier or hook picks another)."""
        return self._config.model

    @property
    def models(self) -> tuple[Model, ...]:
        """``model``, then the fallback models, in order."""
        return self._config.models

    @property
    def instructions(self) -> Instructions:
        """The system prompt, or the function making it."""
        return self._config.instructions

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Every tool a run may call now, by name (read-only; register with ``registry``)."""
        return self.config.tools.by_name

    @property
    def tool_definitions(self) -> tuple[ToolDefinition, ...]:
        """What the model is shown on every step (without deferred tools)."""
        return self.config.tools.advertised

    @property
    def deferred_definitions(self) -> Mapping[str, ToolDefinition]:
        """Deferred tools' definitions, shown once ``tool_search`` finds them."""
        return self.config.tools.deferred

    @property
    def tool_sources(self) -> ToolSources:
        """The agent's tool sources (MCP servers), asked for their tools before each step."""
        return self._config.tool_sources

    @property
    def security(self) -> SecurityConfig | None:
        """The data-flow policy and secrets vault (``Agent(security=...)``), else ``None``."""
        return self._config.security

    @property
    def executor(self) -> ToolExecutor:
        """Runs the tool calls of every run (gate, result processors, cache)."""
        return self._config.executor

    @property
    def result_limiter(self) -> ResultLimiter:
        """Result limits of the agent's tools (spill store, summaries, ``read_result``)."""
        return self._config.result_limiter

    @property
    def code_mode(self) -> CodeMode | None:
        """The code-mode sandbox (``tool_invocation='code-mode'``), else ``None``."""
        return self._config.code_mode

    @property
    def governance(self) -> AgentGovernance | None:
        """The agent's governance (policies, budget, governor), else ``None``."""
        return self._config.governance

    @property
    def context(self) -> ContextKeeper | None:
        """Compaction before each model call (``None``: the history is sent as it is)."""
        return self._config.context

    @property
    def clock(self) -> Clock:
        """The agent's clock."""
        return self._config.clock

    @property
    def store(self) -> Stores | None:
        """Where runs are journaled (``None``: nowhere)."""
        return self._config.store

    @property
    def deps(self) -> DepsT | None:
        """The default dependencies of a run."""
        return self._config.deps

    @property
    def output_type(self) -> Any:
        """What the answer is parsed into (``str``: the text)."""
        return self._config.output_type

    @property
    def max_concurrent_runs(self) -> int | None:
        """Limit on runs in flight at once (``None``: unlimited)."""
        return self._config.max_concurrent_runs

    @property
    def event_bus(self) -> EventBus | None:
        """Observers fed every event of every run."""
        return self._config.event_bus

    @property
    def session_send_mode(self) -> Literal["steer", "queue"]:
        """The default ``mode`` of ``send()`` in this agent's sessions."""
        return self._config.session_send_mode

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model.key!r}, tools={list(self.tools)!r})"

    def with_model(self, model: Model | str) -> Agent[DepsT, OutputT]:
        """A copy of this agent on another model (its fallback models are kept).

        Raises:
            UserError: ``model`` is not a Model or a known ``"provider:model"`` string.
        """
        config = self.config
        resolved = resolve_model(model, "model")
        variant = replace(
            config,
            model=resolved,
            models=(resolved, *config.models[1:]),
            context=build_context(config.context_config, resolved, config.name),
        )
        return self._derive(variant, owns_store=self._owns_store)

    def with_store(self, store: Stores | str) -> Agent[DepsT, OutputT]:
        """A copy of this agent that journals to (and resumes from) another store.

        A URL store is opened on the copy's first run and closed by its ``aclose()``.

        Raises:
            UserError: ``store`` is not a Stores or a valid store URL.
        """
        variant = replace(self.config, store=build_store(store, self.name))
        return self._derive(variant, owns_store=isinstance(store, str))

    def drive(
        self,
        input: str | Sequence[UserPart] | RunState | None = None,
        *,
        resume: str | None = None,
        directive: Directive | None = None,
        deps: DepsT | None = None,
        **options: Any,
    ) -> AgentDrive[OutputT]:
        """Start (or resume) a run the application drives, deciding each tool call.

        An async generator of the run's events: each tool call's
        ``tool.approval.requested`` event waits for the value sent next with
        ``asend``: ``None`` / ``Allow()`` runs the call, ``Rewrite(arguments)`` runs it
        with other arguments, ``Mock(result)`` skips it with that result, ``Deny(reason)``
        refuses it. ``async for`` runs every call. The decisions pass the agent's tool
        gate and journal like approvals (see ``docs/agent-loop.md``).

        Args:
            input: As for :meth:`stream` (text, content parts, or a kept ``RunState``).
            resume: The id of a journaled run to continue instead (the agent's store).
            directive: Decisions on a suspended run's pending approvals.
            deps: Dependencies for this run.
            **options: The other options of :meth:`stream` (``message_history``,
                ``session_id``, ``user_id``, ``tenant_id``, ``metadata``).

        Raises:
            UserError: As :meth:`stream` and :meth:`resume_stream` do.
        """
        return start_drive(self, input, resume, directive, deps, options)

    def stream(
        self,
        input: str | Sequence[UserPart] | RunState | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        tenant_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        directive: Directive | None = None,
        config: RunConfig | None = None,
        session_link: SessionLink | None = None,
        run_id: str | None = None,
        active_agent: str | None = None,
    ) -> AgentStream[OutputT]:
        """Start a run, or resume a suspended one, and stream its events.

        Args:
            input: The user's message: text, or content parts. ``None`` continues
                ``message_history`` as it is. A :class:`RunState` (``result.state``, or
                one loaded with ``run_state_from_json``) resumes that suspended run with
                ``directive``; it may come from another process and another ``Agent``
                instance of the same name.
            message_history: Earlier messages of the conversation.
            deps: Dependencies for this run (default: the agent's ``deps``); ``Lazy``
                values (or a ``Lazy`` whole) are made when the run starts.
            session_id: Conversation id (default: a new one).
            user_id: End user the run acts for.
            tenant_id: Tenant the run belongs to.
            metadata: Free-form values, readable by tools, hooks and instructions.
            directive: With a suspended :class:`RunState`: the human decisions on its
                pending approvals (every pending call needs one).
            config: Run with this configuration instead of :attr:`config` (a variant made
                with ``dataclasses.replace``; its ``name`` must stay the agent's).
            session_link: The session the run belongs to (``bastion.sessions`` passes it):
                its state, drain points and first tool-call hook.
            run_id: The new run's id (default: a fresh one). A sub-agent's run gets an id
                derived from its parent's call, so a resumed parent finds it again.
            active_agent: Start the new run with this agent active, as if a handoff had
                made it so (its instructions, tools and model): the agent itself or one
                reachable through its handoffs (see :meth:`reaches`). A session passes the
                agent its last turn handed off to.

        Returns:
            The run's :class:`AgentStream`; the run starts when iteration starts.

        Raises:
            UserError: No input; a state that cannot be resumed (another agent's, not
                suspended, or a directive that does not decide exactly the pending calls);
                or an ``active_agent`` this agent cannot reach.
        """
        run = self._run_config(config, session_link)
        if isinstance(input, RunState):
            return self._resume(run, input, directive, deps, session_link)
        _check_new_run(run, input, message_history, directive, active_agent)
        state = RunState(
            run_id=run_id or new_id("run"),
            agent_name=run.name,
            session_id=session_id or new_id("session"),
            user_id=user_id,
            tenant_id=tenant_id,
            metadata=dict(metadata) if metadata else {},
            active_agent=None if active_agent == run.name else active_agent,
        )
        journal = self._journal(run, state.run_id, 0, session_link)
        scope = self._scope(run, state, deps, journal, link=session_link)
        return AgentStream[OutputT](
            scope,
            lambda: run_loop(scope, input, message_history),
            self._on_start,
            self._on_done,
        )

    def reaches(self, name: str) -> bool:
        """True when a run of this agent can make ``name`` active.

        That is this agent, or one reachable through its handoffs (agents, and names in
        their registries, looked up now).
        """
        return find_agent(self.config, name) is not None

    def _run_config(self, config: RunConfig | None, link: SessionLink | None) -> RunConfig:
        """The configuration of one run: ``config`` or the agent's, behind a session's hook."""
        run = self.config if config is None else config
        if run.name != self.name:
            raise UserError(
                f"A run of agent {self.name!r} was given the config of agent {run.name!r}."
            )
        if link is None:
            return run
        executor = run.executor  # the session decides tool calls before the agent's hooks
        gate = executor.gate.with_first_hook(link.before_tool_call)
        return replace(run, executor=executor.with_gate(gate))

    def _resume(
        self,
        config: RunConfig,
        saved: RunState,
        directive: Directive | None,
        deps: DepsT | None,
        link: SessionLink | None,
    ) -> AgentStream[OutputT]:
        if saved.agent_name != self.name:
            raise UserError(
                f"Run {saved.run_id} belongs to agent {saved.agent_name!r}, not {self.name!r}."
            )
        if saved.interrupts and config.governance is None:
            raise UserError(
                f"Run {saved.run_id} is suspended on governance interrupts, but agent "
                f"{self.name!r} has no governance: configure the same policies and budget."
            )
        if directive is None and saved.status == "awaiting_approval":
            return self._still_suspended(config, copy.deepcopy(saved), deps)
        decisions = check_directive(saved, directive)
        resolutions = tuple(directive.interrupts) if directive is not None else ()
        state = copy.deepcopy(saved)  # the caller's copy stays as it was
        journal = self._journal(config, state.run_id, None, link)
        if journal is not None:
            journal.decided = directive
        scope = self._scope(config, state, deps, journal, link=link)

        async def resumed() -> AsyncGenerator[AgentEvent, None]:
            if journal is not None:  # a kept state: its suspension must still be open
                await journal.check_open(state)
            async for event in run_loop(scope, None, None, decisions, resolutions):
                yield event

        return AgentStream[OutputT](scope, resumed, self._on_start, self._on_done)

    def _still_suspended(
        self, config: RunConfig, state: RunState, deps: DepsT | None
    ) -> AgentStream[OutputT]:
        """A suspended run resumed with no decision: it stays as it was; no model is called."""
        scope = self._scope(config, state, deps, governed=False)

        async def unchanged() -> AsyncGenerator[AgentEvent, None]:
            yield _end_event(state)

        return AgentStream[OutputT](scope, unchanged, self._on_start, self._on_done)

    def resume_stream(
        self,
        run_id: str,
        *,
        directive: Directive | None = None,
        deps: DepsT | None = None,
        session_link: SessionLink | None = None,
        config: RunConfig | None = None,
    ) -> AgentStream[OutputT]:
        """Continue a journaled run from its last entry, in this or any other process.

        The run's state is rebuilt from the agent's store when iteration starts. A run left
        ``running`` by a crash goes on where it stopped: recorded model responses and tool
        results are replayed, never repeated; a tool call that started without a recorded
        result runs again only if it is ``pure`` / ``read_only`` or has an idempotency key,
        else the run suspends on it ("outcome unknown after crash") for a directive. A run
        awaiting approval needs ``directive``; an ended run yields its ``agent.end`` again.

        Args:
            run_id: The run (``result.run_id``).
            directive: Decisions on the pending approvals and interrupts of a suspended run.
            deps: Dependencies for the rest of the run (default: the agent's ``deps``).
            session_link: The session whose turn the run is (``bastion.sessions`` passes it
                when it continues a turn cut by a crash; it holds the session's turn lease).
            config: Continue with this configuration instead of :attr:`config` (a variant
                made with ``dataclasses.replace``, like :meth:`stream`'s; a sub-agent's run
                continues under its parent's governance, approvals and store).

        Raises:
            UserError: The agent has no store (at once); when iteration starts: the store
                has no such run, it belongs to another agent, or the directive does not fit.
        """
        config = self._run_config(config, None)
        if config.store is None:
            raise UserError(
                f"Agent {self.name!r} has no store: pass Agent(..., store='sqlite:///runs.db') "
                "(the store the run was journaled in) to resume runs by id."
            )
        config = self._run_config(config, session_link)
        placeholder = RunState(run_id=run_id, agent_name=self.name)
        stream: AgentStream[OutputT] = AgentStream[OutputT](
            self._scope(config, placeholder, deps, governed=False),
            lambda: self._resumed(config, stream, run_id, directive, deps, session_link),
            self._on_start,
            self._on_done,
        )
        return stream

    async def resume(
        self,
        run_id: str,
        *,
        directive: Directive | None = None,
        deps: DepsT | None = None,
    ) -> RunResult[OutputT]:
        """Continue a journaled run to its end (or next suspension); see :meth:`resume_stream`."""
        return await self.resume_stream(run_id, directive=directive, deps=deps).drain()

    async def _resumed(  # noqa: PLR0917 - one resumed run's parts
        self,
        config: RunConfig,
        stream: AgentStream[OutputT],
        run_id: str,
        directive: Directive | None,
        deps: DepsT | None,
        link: SessionLink | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        await self._open_store()
        journal = self._journal(config, run_id, None, link)
        assert journal is not None  # the agent has a store
        await journal.claim()  # a live owner's run is refused (RunBusy) before it is read
        events = self._continue(config, stream, journal, run_id, directive, deps, link)
        try:
            async for event in events:
                yield event
        finally:
            await journal.release()  # ended, refused or closed early (else the end released it)

    async def _continue(  # noqa: PLR0917 - one resumed run's parts
        self,
        config: RunConfig,
        stream: AgentStream[OutputT],
        journal: RunJournal,
        run_id: str,
        directive: Directive | None,
        deps: DepsT | None,
        link: SessionLink | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        stores = journal.stores
        replayed = await load_run(stores, run_id, config)
        if link is None:  # else the session continuing its turn holds the turn lease
            await check_session_owner(stores, replayed.state, config.clock)
        state = replayed.state
        journal.seq = replayed.seq
        journal.mark = replayed.mark
        if state.status not in ("running", "awaiting_approval"):
            if directive is not None:
                raise UserError(
                    f"Run {run_id} has ended with status {state.status!r}; "
                    "there is nothing to decide."
                )
            stream._bind(self._scope(config, state, deps, governed=False))  # pyright: ignore[reportPrivateUsage]
            yield _end_event(state)
            return
        if state.status == "awaiting_approval" and directive is None:
            # Nothing decided: the run stays suspended, and its result says what waits.
            stream._bind(self._scope(config, state, deps, governed=False))  # pyright: ignore[reportPrivateUsage]
            yield _end_event(state)
            return
        if state.status == "awaiting_approval":
            if state.interrupts and config.governance is None:
                raise UserError(
                    f"Run {run_id} is suspended on governance interrupts, but agent "
                    f"{self.name!r} has no governance: configure the same policies and budget."
                )
            decisions = check_directive(state, directive)
            resolutions = tuple(directive.interrupts) if directive is not None else ()
            journal.decided = directive
            scope = self._scope(config, state, deps, journal, link=link)
            events = run_loop(scope, None, None, decisions, resolutions)
        else:
            if directive is not None:
                raise UserError(
                    f"Run {run_id} is not awaiting approval (status {state.status!r}); "
                    "resume it without a directive."
                )
            scope = self._scope(config, state, deps, journal, link=link)
            events = run_loop(scope, None, None, recovery=replayed.recovery)
        stream._bind(scope)  # pyright: ignore[reportPrivateUsage]
        async with aclosing(events):
            async for event in events:
                yield event

    def steer(self, text: str) -> bool:
        """Steer the agent's run in flight (:meth:`AgentStream.steer`).

        Returns False when no run is in flight: the message is dropped, never kept for a
        later run.

        Raises:
            UserError: Several runs are in flight (steer one with its stream), or ``text``
                is not a non-empty string.
        """
        stream = self._only_run("steer")
        return stream is not None and stream.steer(text)

    def follow_up(self, text: str) -> bool:
        """Follow up the agent's run in flight (:meth:`AgentStream.follow_up`).

        Returns False when no run is in flight.

        Raises:
            UserError: Several runs are in flight, or ``text`` is not a non-empty string.
        """
        stream = self._only_run("follow_up")
        return stream is not None and stream.follow_up(text)

    def _only_run(self, method: str) -> AgentStream[Any] | None:
        live = [stream for stream in self._live if not stream.done]
        if len(live) > 1:
            raise UserError(
                f"Agent {self.name!r} has {len(live)} runs in flight: call {method}() on the "
                "stream of the run you mean (agent.stream(...))."
            )
        return live[0] if live else None

    def session(
        self,
        id: str | None = None,
        *,
        send_mode: str | None = None,
        on_pending_approvals: Literal["deny", "hold"] = "deny",
        continue_with: Literal["last_agent", "session_agent"] = "last_agent",
    ) -> Session:
        """Open a stateful conversation (:class:`bastion.sessions.Session`) on this agent.

        Its transcript and ``session_state`` live in the agent's store (in memory when it
        has none). ``send_mode`` is the default of ``send()``: ``steer`` or ``queue``
        (default: the agent's ``session_send_mode``). ``on_pending_approvals``: what a
        steering message does to calls waiting for approval, ``deny`` them or ``hold``
        (the message waits until they are decided). ``continue_with``: which agent starts
        each turn, ``last_agent`` (the one the previous turn ended with, after handoffs;
        stored with the session) or ``session_agent`` (always this one).

        Raises:
            UserError: ``send_mode``, ``on_pending_approvals`` or ``continue_with`` is invalid.
        """
        # bastion.sessions sits beside the agent layer and builds on it: loaded on use.
        sessions = importlib.import_module("bastion.sessions")
        return sessions.Session(
            self,
            id,
            send_mode=send_mode,
            on_pending_approvals=on_pending_approvals,
            continue_with=continue_with,
        )

    async def resume_session(
        self,
        id: str,
        *,
        send_mode: str | None = None,
        on_pending_approvals: Literal["deny", "hold"] = "deny",
        continue_with: Literal["last_agent", "session_agent"] = "last_agent",
    ) -> Session:
        """Reopen a stored session (:class:`bastion.sessions.Session`) with its history.

        A session whose turn waits for approvals is reopened waiting: decide them with
        ``session.approve()`` / ``session.deny()``. A turn a crash cut short is continued
        from its run's journal once its turn lease has expired. Its next turn starts with
        the agent its last turn ended with (``continue_with``, see :meth:`session`).

        Raises:
            UserError: The store holds no session ``id``, or an option is invalid.
        """
        sessions = importlib.import_module("bastion.sessions")
        return await sessions.Session.resume(
            self,
            id,
            send_mode=send_mode,
            on_pending_approvals=on_pending_approvals,
            continue_with=continue_with,
        )

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        config: ContextConfig | None = None,
        keep_last: int | None = None,
    ) -> Compaction:
        """Compact a conversation now, as a run would when it passes its trigger.

        Uses the agent's ``context`` settings, or ``config``. With ``keep_last``, every
        exchange older than the last ``keep_last`` is summarized into one summary,
        whatever the budget (a history of ``keep_last`` exchanges or fewer is left as it
        is). The summarizer's calls pass the agent's governor. The messages are not
        changed: use :attr:`Compaction.messages` as the history of the next run.

        Raises:
            UserError: The agent has no ``context`` and no ``config`` was given, or
                ``keep_last`` is negative.
        """
        keeper = self.context if config is None else build_context(config, self.model, self.name)
        if keeper is None:
            raise UserError(
                f"Agent {self.name!r} has no context=ContextConfig(...): pass "
                "compact(messages, config=ContextConfig(...))."
            )
        governance = None if self.governance is None else self.governance.open(new_id("run"))
        if keep_last is None:
            return await keeper.compact(messages, None, governance=governance)
        if keep_last < 0:
            raise UserError(f"compact(keep_last={keep_last}): expected 0 or more exchanges.")
        return await keeper.summarize_older(messages, keep_last, governance=governance)

    def serialize_state(self, state: RunState) -> str:
        """A run's state as JSON text (:func:`bastion.agent.run_state_to_json`)."""
        return run_state_to_json(state)

    def deserialize_state(self, text: str | bytes) -> RunState:
        """Load a state written by :meth:`serialize_state` for a run of this agent.

        Raises:
            UserError: The text is not a run state, or the run belongs to another agent.
        """
        state = run_state_from_json(text)
        if state.agent_name != self.name:
            raise UserError(
                f"Run {state.run_id} belongs to agent {state.agent_name!r}, not {self.name!r}."
            )
        return state

    async def stores(self) -> Stores:
        """The agent's store, opened (an in-memory one when the agent has none)."""
        return await self._artifact_stores()

    def _journal(
        self, config: RunConfig, run_id: str, seq: int | None, link: SessionLink | None
    ) -> RunJournal | None:
        store = config.store
        if store is None:
            return None
        # A session's run is owned through its session's turn lease (``bastion.sessions``).
        keeper = None if link is not None else run_keeper(store, run_id, config.clock)
        # A store of the agent's is opened once; another (a parent run's) is already open.
        opener = self._open_store if store is self.store else store.open
        return RunJournal(
            store,
            run_id,
            config.name,
            opener,
            seq,
            keeper=keeper,
            recording=config.record_responses,
        )

    async def _artifact_stores(self) -> Stores:
        if self.store is not None:
            await self._open_store()
            return self.store
        if self._progress_stores is None:
            self._progress_stores = memory_stores()
            await self._progress_stores.open()
        return self._progress_stores

    async def _open_store(self) -> None:
        store = self.store
        if store is not None and not self._store_ready:
            await store.open()
            self._store_ready = True

    def _scope(
        self,
        config: RunConfig,
        state: RunState,
        deps: DepsT | None,
        journal: RunJournal | None = None,
        *,
        governed: bool = True,
        link: SessionLink | None = None,
    ) -> RunScope:
        # The run's governance; None (no cost) when the agent has no policies or budget.
        # ``governed=False``: a scope that runs nothing (a resumed run's, until it is loaded).
        governance = None
        if config.governance is not None and governed:
            # A sub-agent's run acts below its parents, in its root run's invocation.
            metadata = state.metadata
            governance = config.governance.open(
                state.run_id,
                invocation=metadata.get(INVOCATION),
                ancestry=metadata.get(ANCESTRY) or (),
                graph=metadata.get(GRAPH) or "",
            )
        ctx: RunContext[Any] = RunContext(
            run_id=state.run_id,
            agent_name=config.name,
            deps=deps if deps is not None else config.deps,
            session_id=state.session_id,
            user_id=state.user_id,
            tenant_id=state.tenant_id,
            metadata=state.metadata,
            usage=state.usage,
            step=state.step,
            messages=state.messages,
            clock=config.clock,
            event_bus=config.event_bus,
            session_state=link.state if link is not None else {},
            runtime=config.runtime,
            sandbox=config.sandbox,
            _governed=None if governance is None else governance.call,  # ctx.call
        )
        window = config.context.window() if config.context is not None else None
        scope = RunScope(
            config, state, ctx, governance, journal=journal, window=window, session_link=link
        )
        if state.active_agent is not None:  # a handoff made another agent the active one
            activate(scope, _active_config(config, state))
        return scope

    async def run(
        self,
        input: str | Sequence[UserPart] | RunState | None = None,
        *,
        message_history: Sequence[Message] | None = None,
        deps: DepsT | None = None,
        session_id: str | None = None,
        user_id: str | None = None,
        tenant_id: str | None = None,
        metadata: dict[str, Any] | None = None,
        directive: Directive | None = None,
        config: RunConfig | None = None,
    ) -> RunResult[OutputT]:
        """Run to the end and return the result. A failed run returns, it does not raise.

        Takes the arguments of :meth:`stream`. Call ``result.raise_for_status()`` to
        turn a failure into an exception.
        """
        stream = self.stream(
            input,
            message_history=message_history,
            deps=deps,
            session_id=session_id,
            user_id=user_id,
            tenant_id=tenant_id,
            metadata=metadata,
            directive=directive,
            config=config,
        )
        return await stream.drain()

    def run_sync(
        self,
        input: str | Sequence[UserPart] | None = None,
        **kwargs: Any,
    ) -> RunResult[OutputT]:
        """Run to the end from synchronous code (the one sync entry point).

        Raises:
            UserError: Called from inside a running event loop; use ``await agent.run()``.
        """
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(self._run_and_close(input, kwargs))
        raise UserError("run_sync() was called inside a running event loop; use await agent.run().")

    async def _run_and_close(
        self, input: str | Sequence[UserPart] | None, kwargs: dict[str, Any]
    ) -> RunResult[OutputT]:
        try:
            return await self.run(input, **kwargs)
        finally:
            await self.aclose()  # the sandbox's pool must not outlive run_sync's event loop

    async def __aenter__(self) -> Agent[DepsT, OutputT]:
        return self

    async def __aexit__(self, *exc_info: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        """Release what the agent holds between runs.

        That is: its tool sources (MCP server processes and connections), the code-mode
        sandbox's worker, and a store opened from a URL. The agent stays usable; a later
        run starts what it needs again.
        """
        await self.tool_sources.aclose()
        if self.code_mode is not None:
            await self.code_mode.aclose()
        if self._owns_store and self.store is not None and self._store_ready:
            self._store_ready = False
            await self.store.close()

    def abort(
        self,
        *,
        drain: bool = False,
        on_pending_approvals: Literal["deny", "hold", "fail"] = "deny",
    ) -> int:
        """Abort every run of this agent in flight; returns how many were asked to stop.

        Takes the arguments of :meth:`AgentStream.abort`.
        """
        live = list(self._live)
        for stream in live:
            stream.abort(drain=drain, on_pending_approvals=on_pending_approvals)
        return len(live)

    @property
    def runs_in_flight(self) -> int:
        """How many runs of this agent are in flight."""
        return len(self._live)  # O(1): only started, unfinished runs are in the set

    def _on_start(self, stream: AgentStream[Any]) -> None:
        if self.max_concurrent_runs is not None:
            check_capacity(len(self._live), self.max_concurrent_runs, self.name)
        self._live.add(stream)

    def _on_done(self, stream: AgentStream[Any]) -> None:
        self._live.discard(stream)
        journal = stream._scope.journal  # pyright: ignore[reportPrivateUsage]
        if journal is not None and journal.keeper is not None:
            journal.keeper.stop()  # closed before its end: the lease lapses, nothing renews it


def _active_config(config: RunConfig, state: RunState) -> RunConfig:
    """The config of the agent a handoff left active in ``state``'s run.

    Raises:
        UserError: It cannot be found through the handoffs of the run's agent.
    """
    name = state.active_agent
    assert name is not None  # only asked for a run a handoff moved
    found = find_agent(config, name)
    if found is None:
        raise UserError(
            f"Run {state.run_id} was handed off to agent {name!r}, which agent {config.name!r} "
            "cannot reach through its handoffs: give it the same handoffs (and "
            "agent_registry) it had when the run started."
        )
    return found


def _end_event(state: RunState) -> AgentEndEvent:
    """The ``agent.end`` of an ended run, as its journal recorded it."""
    return AgentEndEvent(
        run_id=state.run_id,
        seq=state.last_seq,
        status=state.status,
        output=state.output,
        usage=state.usage,
        error=state.error,
        steps=state.step,
        duration=state.finished_at - state.started_at,
    )


def _check_new_run(
    run: RunConfig,
    input: str | Sequence[UserPart] | None,
    message_history: Sequence[Message] | None,
    directive: Directive | None,
    active_agent: str | None,
) -> None:
    """Refuse a new run's arguments before anything starts (see :meth:`Agent.stream`)."""
    if directive is not None:
        raise UserError("A directive resumes a suspended run: pass its RunState as input.")
    if active_agent is not None and find_agent(run, active_agent) is None:
        raise UserError(
            f"active_agent={active_agent!r}: agent {run.name!r} cannot reach it through "
            "its handoffs (agents, or names in their agent_registry)."
        )
    check_user_input(input)
    check_history(message_history)
    if input is None and not message_history:
        raise UserError("Give the run an input or a message_history to continue.")
