"""``Agent``: a reusable, validated definition of an agent, and the entry points of a run.

An ``Agent`` holds configuration only; every run gets its own state, so one agent serves
many concurrent runs (bounded by ``max_concurrent_runs`` when set).
"""

from __future__ import annotations

import asyncio
import copy
import importlib
import os
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Mapping, Sequence
from contextlib import aclosing
from typing import TYPE_CHECKING, Any, Generic, Literal

from bastion.context import Compaction, ContextConfig
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
from bastion.core._runtime import check_sandbox_setting
from bastion.governance import Budget, Governor, InterruptHandler, Oracle, Policy
from bastion.observability import ToolAudit
from bastion.security import INBOUND_POLICIES, SecurityConfig
from bastion.stores import Stores
from bastion.tools import (
    ApprovalConfig,
    BeforeToolCall,
    CodeModeConfig,
    CollisionStrategy,
    Directive,
    Embedder,
    InboundPolicy,
    InboundSanitizer,
    RepairHook,
    ResultLimiter,
    ResultProcessor,
    ResultReader,
    SideEffectClass,
    SpillStore,
    Tool,
    ToolCache,
    ToolExecutor,
    ToolGate,
    ToolRegistry,
    ToolSource,
    add_tool_search,
    tool_search_tool,
)
from bastion.tools._search import TOOL_SEARCH

from ._as_tool import check_subagents, subagent_tool
from ._dataflow import apply_security
from ._fallback import FallbackPolicy
from ._guardrails import InputGuardrail, OutputGuardrail
from ._hooks import AgentHooks, LoopHooks, SessionLink
from ._input import check_history, check_user_input
from ._journal import RunJournal
from ._loop import run_loop
from ._output import OUTPUT_MODES, OUTPUT_TOOL, OutputSchema
from ._ownership import check_session_owner, run_keeper
from ._persist import run_state_from_json, run_state_to_json
from ._progress import Progress, memory_stores
from ._replay import load_run
from ._result import OutputT, RunResult
from ._retry import RetryConfig
from ._scope import RunScope
from ._setup import (
    HookFlags,
    build_code_mode,
    build_context,
    build_governance,
    build_store,
    check_positive,
    resolve_model,
)
from ._sources import ToolSources, split_sources
from ._state import RunState
from ._step_overrides import TOOL_CHOICE_MODES
from ._stream import AgentStream, check_capacity
from ._subrun import ANCESTRY, INVOCATION, ExposeTurns, ForwardEvents, InputFilter
from ._tiers import TierResolver
from .steps._approvals import check_directive

if TYPE_CHECKING:
    from bastion.sessions import Session

__all__ = ["Agent", "HookFlags"]

Instructions = str | Callable[[RunContext[Any]], "str | Awaitable[str]"]
_DEFAULT_RETRY = RetryConfig()
_DEFAULT_FALLBACK = FallbackPolicy()


class Agent(Generic[DepsT, OutputT]):
    """An LLM agent: a model, instructions and tools, run as a loop that streams events.

    Example::

        agent = Agent("assistant", model=model, instructions="Be brief.", tools=[add])
        result = await agent.run("What is 2 + 3?")
        print(result.output)

    Args:
        name: Non-empty name, used in events, traces and as the ``agent:<name>`` key.
        model: A :class:`~bastion.core.Model`, or a ``"provider:model"`` string.
        instructions: The system prompt, or a function of the ``RunContext`` (sync or
            async) resolved once per run. Empty: no system message.
        tools: Tools, plain functions (made into tools with :func:`bastion.tool`), and
            tool sources such as MCP servers (``bastion.mcp.MCPServer``): a source is asked
            for its tools before every model call, so its list may change while the agent
            lives. Close the agent (``async with agent:`` or :meth:`aclose`) to stop them.
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
        tool_cancel_grace: Seconds an aborted step waits for tools that ignore
            cancellation before abandoning them.
        inbound_sanitization: One inbound policy for every tool's output, replacing
            each tool's ``inbound_sanitization`` and its trust-class default
            (``pass-through`` for first-party tools, ``detect-and-flag`` for trusted
            skills, ``detect-and-strip-and-wrap`` for untrusted skills, MCP and web
            search). ``None`` keeps the per-tool choice.
        tool_search_embedder: Semantic backend for ``tool_search`` (registered when any
            tool has ``defer_loading=True``), fused with its lexical BM25 ranking.
        collision_strategy: Two tools of different sources (``trust_class``) with one
            name: ``auto-prefix`` renames the lower-precedence one ``<source>__<name>``,
            ``priority`` drops it, ``manual`` raises ``DuplicateToolNameError``. Read the
            outcome in ``agent.registry``.
        tool_event_queue_depth: Most live ``tool.execute.progress`` / ``partial`` events
            held for a slow consumer; beyond, the oldest is dropped (the assembled
            result stays whole).
        tool_cache_size: Most results kept by the cache of tools with a ``cache_ttl``.
        tool_invocation: ``direct`` (the model calls tools) or ``code-mode`` (the model
            sees only ``code_execute`` and ``code_search`` and calls tools from Python in
            a sandbox; needs ``bastion[code]``). Close a code-mode agent with
            :meth:`aclose` to stop its sandbox worker.
        code_mode: Limits of code-mode scripts (:class:`~bastion.tools.CodeModeConfig`).
        spill_dir: Root of the files ``spill_to_file`` tools store full results in
            (default ``<tmpdir>/bastion-spill``; one sub-directory per run).
        summary_model: The cheaper model ``summarize`` tools ask (default: the ``fast``
            entry of ``model_tier_map``, else ``model``).
        result_readers: Further sources of handles ``read_result`` pages (MCP resources,
            ...), tried in order after the spill store; giving any registers ``read_result``.
        policies: Global governance policies (``bastion.governance``), judging every model
            call (``llm:<provider>:<model>``) and tool call (``tool:<name>``).
        oracles: Policies and limits per oracle key (``"llm"``, ``"llm:openai"``,
            ``"tool:search"``, ...); a key inherits its ancestors'.
        budget: Cost budget(s) on model calls (``Budget(cost_usd=10, window="day")``);
            ``window="invocation"`` stops the run cleanly (status ``stopped``, reason
            ``budget``) when it is spent.
        handle_interrupt: Decides interrupts (a mutable limit reached, a policy's
            ``interrupt()``); without it the run suspends (``awaiting_approval``) until a
            ``Directive(interrupts=[...])`` resumes it.
        governor: A governor to share (between agents, with your own actions); exclusive
            with the four arguments above. By default one is built on the agent's clock.
        governance_events: Which governance signals the run's stream carries as
            ``governance.signal`` events: ``"decisions"`` (default: denials, breaches,
            interrupts, mutations), ``"all"`` (also the routine ``oracle.exec.in/out`` and
            ``oracle.policy.<oracle>`` signals of every allowed action) or ``"none"``.
            Observers of the governor (``governor.subscribe``) get every signal regardless.
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
        runtime: Where tools run commands and touch files, as ``ctx.runtime``
            (``bastion.runtimes.LocalRuntime`` or ``SandboxRuntime``; the built-in
            ``bash`` and file tools need one). ``None``: tools have no runtime.
        sandbox: The sandbox of tools that do not choose their own ``sandbox=``: a
            :class:`~bastion.core.SandboxConfig`, ``True`` (the defaults) or ``False`` /
            ``None`` (none). A tool's own setting wins; ``False`` on a tool turns it off.
        security: A :class:`~bastion.security.SecurityConfig`: the data-flow policy checked
            before every sink call (tool outputs then carry provenance) and the secrets
            vault tools reveal from (``secrets_allowed``). See ``docs/security.md``.

    Raises:
        UserError: The configuration is invalid (nothing has been run).
    """

    def __init__(
        self,
        name: str,
        *,
        model: Model | str,
        instructions: Instructions = "",
        tools: Sequence[Tool | Callable[..., Any] | ToolSource] = (),
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
        tool_cancel_grace: float = 0.05,
        inbound_sanitization: InboundPolicy | None = None,
        tool_search_embedder: Embedder | None = None,
        collision_strategy: CollisionStrategy = "auto-prefix",
        tool_event_queue_depth: int = 256,
        tool_cache_size: int = 1024,
        tool_invocation: Literal["direct", "code-mode"] = "direct",
        code_mode: CodeModeConfig | None = None,
        spill_dir: str | os.PathLike[str] | None = None,
        summary_model: Model | str | None = None,
        result_readers: Sequence[ResultReader] = (),
        policies: Sequence[Policy] = (),
        oracles: Mapping[str, Oracle | Sequence[Policy]] | None = None,
        budget: Budget | Sequence[Budget] | None = None,
        handle_interrupt: InterruptHandler | None = None,
        governor: Governor | None = None,
        governance_events: Literal["decisions", "all", "none"] = "decisions",
        store: Stores | str | None = None,
        session_send_mode: Literal["steer", "queue"] = "steer",
        context: ContextConfig | None = None,
        runtime: Runtime | None = None,
        sandbox: bool | SandboxConfig | None = None,
        security: SecurityConfig | None = None,
    ) -> None:
        if not isinstance(name, str) or not name.strip():  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(f"Agent name must be a non-empty string, got {name!r}.")
        if model is None:  # pyright: ignore[reportUnnecessaryComparison]
            raise UserError(f"Agent {name!r} needs a model.")
        check_positive("max_steps", max_steps, name)
        check_positive("max_parallel_tools", max_parallel_tools, name)
        check_positive("tool_event_queue_depth", tool_event_queue_depth, name)
        check_positive("tool_cache_size", tool_cache_size, name)
        check_sandbox_setting(sandbox, f"Agent {name!r}")
        if runtime is not None and not isinstance(runtime, Runtime):  # pyright: ignore[reportUnnecessaryIsInstance]
            raise UserError(
                f"Agent {name!r}: runtime must implement bastion.core.Runtime "
                f"(e.g. LocalRuntime('.')), got {runtime!r}."
            )
        self.runtime = runtime
        self.sandbox = sandbox
        if max_concurrent_runs is not None:
            check_positive("max_concurrent_runs", max_concurrent_runs, name)
        if output_retries < 0:
            raise UserError(f"Agent {name!r}: output_retries must be >= 0, got {output_retries!r}.")
        if on_max_steps not in ("fail", "return"):
            raise UserError(f"Agent {name!r}: on_max_steps must be 'fail' or 'return'.")
        if session_send_mode not in ("steer", "queue"):
            raise UserError(
                f"Agent {name!r}: session_send_mode must be 'steer' or 'queue', "
                f"got {session_send_mode!r}."
            )
        if not (isinstance(instructions, str) or callable(instructions)):
            raise UserError(f"Agent {name!r}: instructions must be a string or a function.")
        if inbound_sanitization is not None and inbound_sanitization not in INBOUND_POLICIES:
            raise UserError(
                f"Agent {name!r}: unknown inbound_sanitization {inbound_sanitization!r}. "
                f"Use one of: {', '.join(repr(p) for p in INBOUND_POLICIES)}."
            )
        self.name = name
        self.description = description
        self.model = resolve_model(model, "model")
        self.models: tuple[Model, ...] = (
            self.model,
            *(resolve_model(m, "fallback model") for m in fallback_models),
        )
        self.instructions = instructions
        self.audit = ToolAudit()
        # The registry resolves names and keeps ``self.tools`` (what the executor reads)
        # in sync; built-in tools added to ``self.tools`` below are adopted by it.
        self.tools: dict[str, Tool] = {}
        plain_tools, sources = split_sources(tools, f"Agent {name!r}")
        if sources and tool_invocation == "code-mode":
            raise UserError(
                f"Agent {name!r}: tool sources (MCP servers) cannot be used with "
                "tool_invocation='code-mode' yet; use 'direct'."
            )
        self.registry = ToolRegistry(
            plain_tools,
            collision_strategy=collision_strategy,
            owner=f"Agent {name!r}",
            counters=self.audit.counters,
            into=self.tools,
        )
        # Registers tool_search when a tool is deferred; deferred tools' definitions are
        # advertised once tool_search promotes them (RunState.promoted_tools).
        self.deferred_definitions = add_tool_search(
            self.tools, embedder=tool_search_embedder, agent=name
        )
        self._tool_search_embedder = tool_search_embedder
        self._tool_search: Tool | None = (
            self.tools.get(TOOL_SEARCH) if self.deferred_definitions else None
        )
        self.tool_sources = ToolSources(sources, self.registry)
        # Result limits (SPEC T-18): read_result joins the tools when a tool may spill or
        # result_readers are given (G-39, G-45); the limiter is the last result processor.
        fast = (model_tier_map or {}).get("fast")
        summarizer = summary_model if summary_model is not None else fast
        self.result_limiter = ResultLimiter(
            self.tools.values(),
            spill=SpillStore(spill_dir),
            summary_model=self.model
            if summarizer is None
            else resolve_model(summarizer, "summary_model"),
            # An MCP server reads the resources its tools link to (``mcp:<server>:<uri>``).
            result_readers=[*result_readers, *(s for s in sources if isinstance(s, ResultReader))],
            owner=f"Agent {name!r}",
        )
        read_result = self.result_limiter.read_result_tool()
        if read_result is not None:
            if read_result.name in self.tools:
                raise UserError(
                    f"Agent {name!r}: a tool is named {read_result.name!r}, the name of the "
                    "built-in reader of stored results. Rename it."
                )
            self.tools[read_result.name] = read_result
        self.tool_definitions: tuple[ToolDefinition, ...] = tuple(
            t.definition() for t in self.tools.values() if not t.defer_loading
        )
        # Code mode (SPEC G-46): only code_execute and code_search are advertised; the
        # real tools stay in ``self.tools`` for the executor, reachable from scripts.
        self.code_mode = build_code_mode(tool_invocation, code_mode, self.tools, approval, name)
        if self.code_mode is not None:
            self.tool_definitions = tuple(t.definition() for t in self.code_mode.tools)
        self._views_version = self.registry.version
        self.output_type = output_type
        self.output_schema = None if output_type is str else OutputSchema(output_type)
        self.output_retries = output_retries
        if output_mode is not None and output_mode not in OUTPUT_MODES:
            raise UserError(
                f"Agent {name!r}: unknown output_mode {output_mode!r}. "
                f"Use one of: {', '.join(repr(m) for m in OUTPUT_MODES)}."
            )
        if output_mode is not None and self.output_schema is None:
            raise UserError(
                f"Agent {name!r}: output_mode={output_mode!r} needs an output_type other than str."
            )
        if output_mode == "tool" and OUTPUT_TOOL in self.tools:
            raise UserError(
                f"Agent {name!r}: output_mode='tool' answers with a {OUTPUT_TOOL!r} tool, "
                "but one of the agent's tools has that name. Rename it."
            )
        self.output_mode: OutputMode | None = output_mode
        self.hooks = hooks
        self.loop_hooks = loop_hooks
        self.hook_flags = HookFlags.of(hooks, loop_hooks)
        self.input_guardrails = tuple(g for g in guardrails if isinstance(g, InputGuardrail))
        self.output_guardrails = tuple(g for g in guardrails if isinstance(g, OutputGuardrail))
        if len(self.input_guardrails) + len(self.output_guardrails) != len(guardrails):
            raise UserError(
                f"Agent {name!r}: guardrails must be made with @input_guardrail or "
                "@output_guardrail."
            )
        self.retry = retry
        if fallback_policy is not None and not isinstance(fallback_policy, FallbackPolicy):
            raise UserError(
                f"Agent {name!r}: fallback_policy must be a FallbackPolicy, "
                f"got {fallback_policy!r}."
            )
        self.fallback_policy = fallback_policy or _DEFAULT_FALLBACK
        self.max_steps = max_steps
        self.on_max_steps = on_max_steps
        self.max_parallel_tools = max_parallel_tools
        self.model_settings = model_settings or ModelSettings()
        choice = self.model_settings.tool_choice
        if choice not in (None, *TOOL_CHOICE_MODES) and choice not in self.tools:
            raise UserError(
                f"Agent {name!r}: model_settings.tool_choice={choice!r} is not one of its "
                f"tools. Use 'auto', 'required', 'none' or one of: "
                f"{', '.join(repr(t) for t in self.tools) or '(no tools)'}."
            )
        self.deps = deps
        self.clock: Clock = clock or SystemClock()
        self.max_concurrent_runs = max_concurrent_runs
        self.event_bus = event_bus
        if reasoning_retention not in ("keep", "strip"):
            raise UserError(f"Agent {name!r}: reasoning_retention must be 'keep' or 'strip'.")
        self.reasoning_retention = reasoning_retention
        self.preferred_model = preferred_model
        hints = [(f"Tool {t.name!r}", t.preferred_model) for t in self.tools.values()]
        hints.append((f"Agent {name!r}", preferred_model))
        wanted = [(owner, hint) for owner, hint in hints if hint is not None]
        self.tiers = (
            TierResolver(model_tier_map or {}, wanted) if wanted or model_tier_map else None
        )
        # Sanitisation first: it must see the whole body before any limit cuts it.
        processors: list[ResultProcessor] = [
            InboundSanitizer(override=inbound_sanitization, counters=self.audit.counters)
        ]
        processors.append(self.result_limiter)  # keep last: limits apply to the screened body
        self.executor = ToolExecutor(
            self.tools,
            max_parallel=max_parallel_tools,
            clock=self.clock,
            gate=ToolGate(
                deny_tools=deny_tools,
                before_tool_call=before_tool_call,
                repair=repair_tool_call,
                approval=approval,
            ),
            processors=processors,
            audit=self.audit,
            cancel_grace=tool_cancel_grace,
            cache=ToolCache(self.clock, max_entries=tool_cache_size, counters=self.audit.counters),
            event_queue_depth=tool_event_queue_depth,
        )
        if self.code_mode is not None:
            self.code_mode.bind(self.executor)
        self.governance = build_governance(
            name,
            self.clock,
            governor,
            (policies, oracles, budget, handle_interrupt),
            governance_events,
        )
        if self.governance is not None:  # stage 0 of the tool gate
            self.executor.gate.governor = self.governance
        self.security = apply_security(name, security, self.executor, self.audit.counters)
        check_subagents(name, self.tools, self.governance)
        self._live: weakref.WeakSet[AgentStream[Any]] = weakref.WeakSet()
        self.store = build_store(store, name)
        self._owns_store = isinstance(store, str)
        self._store_ready = False
        self._progress_stores: Stores | None = None
        self.progress = Progress(self._artifact_stores, name)
        """Progress artifacts (G-06) in the agent's store (in memory when it has none)."""
        self.session_link: SessionLink | None = None
        """Set on a session's copy of the agent (``bastion.sessions``), else ``None``."""
        self.session_send_mode: Literal["steer", "queue"] = session_send_mode
        """The default ``mode`` of ``send()`` in this agent's sessions."""
        self.context_config = context
        self.context = build_context(context, self.model, name)
        """Compaction before each model call (``None``: the history is sent as it is)."""

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model.key!r}, tools={list(self.tools)!r})"

    def with_model(self, model: Model | str) -> Agent[DepsT, OutputT]:
        """A copy of this agent on another model (its fallback models are kept).

        Raises:
            UserError: ``model`` is not a Model or a known ``"provider:model"`` string.
        """
        clone = copy.copy(self)
        clone.model = resolve_model(model, "model")
        clone.models = (clone.model, *self.models[1:])
        clone.context = build_context(self.context_config, clone.model, self.name)
        clone._live = weakref.WeakSet()
        return clone

    def with_store(self, store: Stores | str) -> Agent[DepsT, OutputT]:
        """A copy of this agent that journals to (and resumes from) another store.

        A URL store is opened on the copy's first run and closed by its ``aclose()``.

        Raises:
            UserError: ``store`` is not a Stores or a valid store URL.
        """
        clone = copy.copy(self)
        clone.store = build_store(store, self.name)
        clone._owns_store = isinstance(store, str)
        clone._store_ready = False
        clone._live = weakref.WeakSet()
        clone.progress = Progress(clone._artifact_stores, self.name)
        return clone

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        expose_turns: ExposeTurns = "final",
        forward_events: ForwardEvents = "all",
        input_filter: InputFilter | None = None,
        side_effect_class: SideEffectClass | None = None,
    ) -> Tool:
        """This agent as a tool another agent's model can call: a sub-agent (SPEC S-28).

        The model calls it with ``{"input": "<task>"}``. The sub-agent runs on that input
        alone (no parent history unless ``input_filter`` builds some), with the parent
        run's deps, session id, user and tenant, and none of its other state (no session
        state, no metadata, no secrets). Its events reach the parent's stream live as
        ``subagent.event``; its usage adds to the parent run's; under a governed parent
        the call is an action on ``agent:<name>`` and the sub-agent's own calls are
        governed by the parent's governor below it. See ``docs/multi-agent.md``.

        Args:
            name: The tool's name (default: the agent's name).
            description: What the parent's model reads about it (default: the agent's
                ``description``).
            expose_turns: What the parent's model gets back: ``final`` (the answer),
                ``all`` (the text of every turn, in order) or ``none`` (only that it
                finished).
            forward_events: Which of the sub-agent's events join the parent's stream:
                ``all``, ``lifecycle`` (not the text, reasoning and argument pieces) or
                ``none``.
            input_filter: Builds the sub-agent's history from the parent's finished
                turns (a function of the message list, sync or async).
            side_effect_class: Overrides the derived class (``read_only`` when every
                tool of the agent is ``pure`` or ``read_only``, else ``side_effecting``).

        Raises:
            UserError: An option is invalid.
        """
        return subagent_tool(
            self,
            name=name,
            description=description,
            expose_turns=expose_turns,
            forward_events=forward_events,
            input_filter=input_filter,
            side_effect_class=side_effect_class,
        )

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

        Returns:
            The run's :class:`AgentStream`; the run starts when iteration starts.

        Raises:
            UserError: No input; or a state that cannot be resumed (another agent's, not
                suspended, or a directive that does not decide exactly the pending calls).
        """
        if isinstance(input, RunState):
            return self._resume(input, directive, deps)
        if directive is not None:
            raise UserError("A directive resumes a suspended run: pass its RunState as input.")
        check_user_input(input)
        check_history(message_history)
        if input is None and not message_history:
            raise UserError("Give the run an input or a message_history to continue.")
        state = RunState(
            run_id=new_id("run"),
            agent_name=self.name,
            session_id=session_id or new_id("session"),
            user_id=user_id,
            tenant_id=tenant_id,
            metadata=dict(metadata) if metadata else {},
        )
        scope = self._scope(state, deps, self._journal(state.run_id, 0))
        return AgentStream[OutputT](
            scope,
            lambda: run_loop(scope, input, message_history),
            self._on_start,
            self._on_done,
        )

    def _resume(
        self, saved: RunState, directive: Directive | None, deps: DepsT | None
    ) -> AgentStream[OutputT]:
        if saved.agent_name != self.name:
            raise UserError(
                f"Run {saved.run_id} belongs to agent {saved.agent_name!r}, not {self.name!r}."
            )
        if saved.interrupts and self.governance is None:
            raise UserError(
                f"Run {saved.run_id} is suspended on governance interrupts, but agent "
                f"{self.name!r} has no governance: configure the same policies and budget."
            )
        if directive is None and saved.status == "awaiting_approval":
            return self._still_suspended(copy.deepcopy(saved), deps)
        decisions = check_directive(saved, directive)
        resolutions = tuple(directive.interrupts) if directive is not None else ()
        state = copy.deepcopy(saved)  # the caller's copy stays as it was
        journal = self._journal(state.run_id, None)
        if journal is not None:
            journal.decided = directive
        scope = self._scope(state, deps, journal)

        async def resumed() -> AsyncGenerator[AgentEvent, None]:
            if journal is not None:  # a kept state: its suspension must still be open
                await journal.check_open(state)
            async for event in run_loop(scope, None, None, decisions, resolutions):
                yield event

        return AgentStream[OutputT](scope, resumed, self._on_start, self._on_done)

    def _still_suspended(self, state: RunState, deps: DepsT | None) -> AgentStream[OutputT]:
        """A suspended run resumed with no decision: it stays as it was; no model is called."""
        scope = self._scope(state, deps, governed=False)

        async def unchanged() -> AsyncGenerator[AgentEvent, None]:
            yield _end_event(state)

        return AgentStream[OutputT](scope, unchanged, self._on_start, self._on_done)

    def resume_stream(
        self,
        run_id: str,
        *,
        directive: Directive | None = None,
        deps: DepsT | None = None,
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

        Raises:
            UserError: The agent has no store (at once); when iteration starts: the store
                has no such run, it belongs to another agent, or the directive does not fit.
        """
        stores = self.store
        if stores is None:
            raise UserError(
                f"Agent {self.name!r} has no store: pass Agent(..., store='sqlite:///runs.db') "
                "(the store the run was journaled in) to resume runs by id."
            )
        placeholder = RunState(run_id=run_id, agent_name=self.name)
        stream: AgentStream[OutputT] = AgentStream[OutputT](
            self._scope(placeholder, deps, governed=False),
            lambda: self._resumed(stream, stores, run_id, directive, deps),
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

    async def _resumed(
        self,
        stream: AgentStream[OutputT],
        stores: Stores,
        run_id: str,
        directive: Directive | None,
        deps: DepsT | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        await self._open_store()
        journal = self._journal(run_id, None)
        assert journal is not None  # the agent has a store
        await journal.claim()  # a live owner's run is refused (RunBusy) before it is read
        try:
            async for event in self._continue(stream, journal, run_id, directive, deps):
                yield event
        finally:
            await journal.release()  # ended, refused or closed early (else the end released it)

    async def _continue(
        self,
        stream: AgentStream[OutputT],
        journal: RunJournal,
        run_id: str,
        directive: Directive | None,
        deps: DepsT | None,
    ) -> AsyncGenerator[AgentEvent, None]:
        stores = journal.stores
        replayed = await load_run(stores, run_id, self)
        await check_session_owner(stores, replayed.state, self.clock)
        state = replayed.state
        journal.seq = replayed.seq
        journal.mark = replayed.mark
        if state.status not in ("running", "awaiting_approval"):
            if directive is not None:
                raise UserError(
                    f"Run {run_id} has ended with status {state.status!r}; "
                    "there is nothing to decide."
                )
            stream._bind(self._scope(state, deps, governed=False))  # pyright: ignore[reportPrivateUsage]
            yield _end_event(state)
            return
        if state.status == "awaiting_approval" and directive is None:
            # Nothing decided: the run stays suspended, and its result says what waits.
            stream._bind(self._scope(state, deps, governed=False))  # pyright: ignore[reportPrivateUsage]
            yield _end_event(state)
            return
        if state.status == "awaiting_approval":
            if state.interrupts and self.governance is None:
                raise UserError(
                    f"Run {run_id} is suspended on governance interrupts, but agent "
                    f"{self.name!r} has no governance: configure the same policies and budget."
                )
            decisions = check_directive(state, directive)
            resolutions = tuple(directive.interrupts) if directive is not None else ()
            journal.decided = directive
            scope = self._scope(state, deps, journal)
            events = run_loop(scope, None, None, decisions, resolutions)
        else:
            if directive is not None:
                raise UserError(
                    f"Run {run_id} is not awaiting approval (status {state.status!r}); "
                    "resume it without a directive."
                )
            scope = self._scope(state, deps, journal)
            events = run_loop(scope, None, None, recovery=replayed.recovery)
        stream._bind(scope)  # pyright: ignore[reportPrivateUsage]
        async with aclosing(events):
            async for event in events:
                yield event

    def session(self, id: str | None = None, *, send_mode: str | None = None) -> Session:
        """Open a stateful conversation (:class:`bastion.sessions.Session`) on this agent.

        Its transcript and ``session_state`` live in the agent's store (in memory when it
        has none). ``send_mode`` is the default of ``send()``: ``steer`` or ``queue``
        (default: the agent's ``session_send_mode``).

        Raises:
            UserError: ``send_mode`` is not ``steer`` or ``queue``.
        """
        # bastion.sessions sits beside the agent layer and builds on it: loaded on use.
        sessions = importlib.import_module("bastion.sessions")
        return sessions.Session(self, id, send_mode=send_mode)

    async def resume_session(self, id: str, *, send_mode: str | None = None) -> Session:
        """Reopen a stored session (:class:`bastion.sessions.Session`) with its history.

        A session whose turn waits for approvals is reopened waiting: decide them with
        ``session.approve()`` / ``session.deny()``.

        Raises:
            UserError: The store holds no session ``id``, or ``send_mode`` is invalid.
        """
        sessions = importlib.import_module("bastion.sessions")
        return await sessions.Session.resume(self, id, send_mode=send_mode)

    async def compact(
        self, messages: Sequence[Message], *, config: ContextConfig | None = None
    ) -> Compaction:
        """Compact a conversation now, as a run would when it passes its trigger.

        Uses the agent's ``context`` settings, or ``config``. The summarizer's calls pass
        the agent's governor. The messages are not changed: use
        :attr:`Compaction.messages` as the history of the next run.

        Raises:
            UserError: The agent has no ``context`` and no ``config`` was given.
        """
        keeper = self.context if config is None else build_context(config, self.model, self.name)
        if keeper is None:
            raise UserError(
                f"Agent {self.name!r} has no context=ContextConfig(...): pass "
                "compact(messages, config=ContextConfig(...))."
            )
        governance = None if self.governance is None else self.governance.open(new_id("run"))
        return await keeper.compact(messages, None, governance=governance)

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

    def for_session(self, link: SessionLink, hook: BeforeToolCall) -> Agent[DepsT, OutputT]:
        """A copy of this agent whose runs belong to a session.

        ``hook`` decides tool calls before the agent's own ``before_tool_call`` hooks;
        ``link`` supplies ``ctx.session_state`` and steering messages.
        """
        clone = copy.copy(self)
        clone.executor = copy.copy(self.executor)
        clone.executor.gate = self.executor.gate.with_first_hook(hook)
        clone.session_link = link
        clone._live = weakref.WeakSet()
        return clone

    async def stores(self) -> Stores:
        """The agent's store, opened (an in-memory one when the agent has none)."""
        return await self._artifact_stores()

    def _journal(self, run_id: str, seq: int | None) -> RunJournal | None:
        store = self.store
        if store is None:
            return None
        # A session's run is owned through its session's turn lease (``bastion.sessions``).
        keeper = None if self.session_link is not None else run_keeper(store, run_id, self.clock)
        return RunJournal(store, run_id, self.name, self._open_store, seq, keeper=keeper)

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
        state: RunState,
        deps: DepsT | None,
        journal: RunJournal | None = None,
        *,
        governed: bool = True,
    ) -> RunScope:
        # The run's governance; None (no cost) when the agent has no policies or budget.
        # ``governed=False``: a scope that runs nothing (a resumed run's, until it is loaded).
        governance = None
        if self.governance is not None and governed:
            # A sub-agent's run acts below its parents, in its root run's invocation.
            metadata = state.metadata
            governance = self.governance.open(
                state.run_id,
                invocation=metadata.get(INVOCATION),
                ancestry=metadata.get(ANCESTRY) or (),
            )
        ctx: RunContext[Any] = RunContext(
            run_id=state.run_id,
            agent_name=self.name,
            deps=deps if deps is not None else self.deps,
            session_id=state.session_id,
            user_id=state.user_id,
            tenant_id=state.tenant_id,
            metadata=state.metadata,
            usage=state.usage,
            step=state.step,
            messages=state.messages,
            clock=self.clock,
            event_bus=self.event_bus,
            session_state=self.session_link.state if self.session_link is not None else {},
            runtime=self.runtime,
            sandbox=self.sandbox,
            _governed=None if governance is None else governance.call,  # ctx.call
        )
        window = self.context.window() if self.context is not None else None
        return RunScope(self, state, ctx, self.clock, governance, journal=journal, window=window)

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

    def sync_tool_views(self) -> None:
        """Rebuild what the model is shown after the registry changed; cheap when it did not.

        Tools registered after construction (``agent.registry.register``, a tool source's
        new list) join ``tool_definitions``; deferred ones are indexed by a new
        ``tool_search``. Called by the loop before every model request.
        """
        if self.registry.version == self._views_version:
            return
        deferred = [t for n, t in self.tools.items() if t.defer_loading and n != TOOL_SEARCH]
        current = self.tools.get(TOOL_SEARCH)
        if (deferred or self._tool_search is not None) and (
            current is None or current is self._tool_search
        ):
            # Only the built-in search is replaced; a user's own tool_search is left alone.
            self._tool_search = tool_search_tool(deferred, embedder=self._tool_search_embedder)
            self.tools[TOOL_SEARCH] = self._tool_search
        self.deferred_definitions = {
            t.name: ToolDefinition(
                name=t.name, description=t.description, parameters=t.parameters, strict=t.strict
            )
            for t in deferred
        }
        if self.code_mode is None:
            self.tool_definitions = tuple(
                t.definition() for t in self.tools.values() if not t.defer_loading
            )
        self._views_version = self.registry.version

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
