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
    RunContext,
    Runtime,
    ToolDefinition,
    UserError,
    UserPart,
    new_id,
)
from bastion.core._context import DepsT

from ._assemble import AgentSpec, Hooks, assemble
from ._capability import Capability
from ._config import Instructions, RunConfig
from ._drive import AgentDrive, start_drive
from ._extensions import ToolFactory
from ._fallback import FallbackPolicy
from ._handoffs import Handoff, HandoffTarget, find_agent
from ._input import check_history, check_user_input
from ._journal import RunJournal
from ._loop import run_loop
from ._options import GovernanceOptions, ModelOptions, RunOptions, ToolOptions
from ._output import Output
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
    build_store,
    resolve_model,
)
from ._state import RunState
from ._stream import AgentStream, check_capacity
from .steps._approvals import check_directive
from .steps._handoff import activate

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Mapping, Sequence

    from bastion.context import Compaction, ContextConfig
    from bastion.governance import Budget, Policy
    from bastion.security import SecurityConfig
    from bastion.sessions import Session
    from bastion.stores import Stores
    from bastion.tools import (
        CodeMode,
        Directive,
        ResultLimiter,
        Tool,
        ToolExecutor,
        ToolSource,
    )

    from ._context import ContextKeeper
    from ._governance import AgentGovernance
    from ._guardrails import InputGuardrail, OutputGuardrail
    from ._hooks import SessionLink
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
            dataclass, ``list[int]``, …); the answer is parsed into it. An
            :class:`Output` also says how it is asked for, retried and verified.
        deps: Default dependencies, given to tools as ``ctx.deps`` (``Lazy`` values are
            made once per run).
        description: What the agent does, for humans and for other agents.
        model_settings: Sampling settings for every call.
        max_steps: Most model calls in one run (``run_options.on_max_steps`` says what
            happens then).
        retry: Retry of transient model errors; ``None`` disables retrying.
        hooks: Observers of the run (:class:`AgentHooks`), decision points in the loop
            (:class:`LoopHooks`), or one of each.
        guardrails: Input and output guardrails, in the order they run.
        store: Where runs are journaled (``bastion.stores``: a ``Stores``, or a URL such
            as ``"sqlite:///runs.db"``). Every model response, tool start and tool result
            is journaled (in batches; always before a tool runs, before a human is asked and
            before the run ends), so :meth:`resume` continues the run in any process sharing
            the store without repeating a journaled model call or tool call.
            ``None`` (default): nothing is journaled.
        context: Keep conversations inside the model's context window
            (:class:`~bastion.context.ContextConfig`: compaction strategy, trigger, summarizer).
            ``None`` (default): the history is sent as it is.
        handoffs: Agents this one may hand the conversation to: agents, their names (looked
            up in ``run_options.agent_registry`` when the transfer happens) or
            :func:`handoff` specs. Each is advertised as a ``transfer_to_<name>`` tool;
            calling it makes the target the run's active agent (its instructions, tools and
            model), with the history its input filter keeps. See ``docs/multi-agent.md``.
        budget: Cost budget(s) on model calls (``Budget(cost_usd=10, window="day")``);
            ``window="invocation"`` stops the run cleanly (status ``stopped``, reason
            ``budget``) when it is spent.
        policies: Global governance policies (``bastion.governance``), judging every model
            call (``llm:<provider>:<model>``) and tool call (``tool:<name>``).
        security: A :class:`~bastion.security.SecurityConfig`: the data-flow policy checked
            before every sink call (tool outputs then carry provenance) and the secrets
            vault tools reveal from (``secrets_allowed``). See ``docs/security.md``.
        runtime: Where tools run commands and touch files, as ``ctx.runtime``
            (``bastion.runtimes.LocalRuntime`` or ``SandboxRuntime``; the built-in
            ``bash`` and file tools need one). ``None``: tools have no runtime.
        capability: ``read_only``: the agent's tools that may change something (and
            handoffs) are not shown to its model, and a call to one is refused
            (``capability_blocked``). ``full`` (default): all its tools. A parent can
            also narrow a sub-agent with ``bastion.multi.as_tool(agent, capability=...)``.
        clock: The clock (``bastion.testing.VirtualClock`` in tests).
        tool_options: How tool calls are decided (approval, ``before_call`` hooks, repair,
            denied names, parallelism, loop detection, the default sandbox) and how tools
            are named, limited, cached and invoked (:class:`ToolOptions`).
        governance: The less common governance settings (:class:`GovernanceOptions`).
        model_options: Fallback models, model tiers and the preferred model, reasoning
            retention and response recording (:class:`ModelOptions`).
        run_options: What ``max_steps`` does, concurrent runs, the event bus, sessions'
            send mode, follow-up suggestions and handoff limits (:class:`RunOptions`).

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
        output_type: type[OutputT] | Output[OutputT] | Any = str,
        deps: DepsT | None = None,
        description: str = "",
        model_settings: ModelSettings | None = None,
        max_steps: int = 50,
        retry: RetryConfig | None = _DEFAULT_RETRY,
        hooks: Hooks = None,
        guardrails: Sequence[InputGuardrail | OutputGuardrail] = (),
        store: Stores | str | None = None,
        context: ContextConfig | None = None,
        handoffs: Sequence[HandoffTarget | Handoff | str] = (),
        budget: Budget | Sequence[Budget] | None = None,
        policies: Sequence[Policy] = (),
        security: SecurityConfig | None = None,
        runtime: Runtime | None = None,
        capability: Capability = "full",
        clock: Clock | None = None,
        tool_options: ToolOptions | None = None,
        governance: GovernanceOptions | None = None,
        model_options: ModelOptions | None = None,
        run_options: RunOptions | None = None,
    ) -> None:
        built = assemble(
            AgentSpec(
                name=name,
                model=model,
                instructions=instructions,
                tools=tools,
                output_type=output_type,
                deps=deps,
                description=description,
                model_settings=model_settings,
                max_steps=max_steps,
                retry=retry,
                hooks=hooks,
                guardrails=guardrails,
                store=store,
                context=context,
                handoffs=handoffs,
                budget=budget,
                policies=policies,
                security=security,
                runtime=runtime,
                capability=capability,
                clock=clock,
                tool_options=tool_options,
                governance=governance,
                model_options=model_options,
                run_options=run_options,
            )
        )
        self.registry = built.registry
        """The agent's tools by name; ``registry.register(tool)`` adds one for later steps."""
        self.audit = built.audit
        self._adopt(built.config, owns_store=isinstance(store, str))

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
