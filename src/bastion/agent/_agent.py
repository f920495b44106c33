"""``Agent``: a reusable, validated definition of an agent, and the entry points of a run.

An ``Agent`` holds configuration only; every run gets its own state, so one agent serves
many concurrent runs (bounded by ``max_concurrent_runs`` when set).
"""

from __future__ import annotations

import asyncio
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Generic, Literal

from bastion._lazy import lazy_module
from bastion.core import (
    Clock,
    Message,
    Model,
    ModelSettings,
    Runtime,
    UserError,
    UserPart,
    new_id,
)
from bastion.core._context import DepsT

from ._options import GovernanceOptions, ModelOptions, RunOptions, ToolOptions
from ._result import OutputT, RunResult
from ._retry import RetryConfig
from ._state import RunState

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Unpack

    from bastion.context import Compaction, ContextConfig
    from bastion.governance import Budget, Policy
    from bastion.security import SecurityConfig
    from bastion.stores import Stores
    from bastion.tools import (
        Directive,
        Tool,
        ToolSource,
    )

    from . import (
        _assemble,
        _drive,
        _handoffs,
        _input,
        _loop,
        _persist,
        _progress,
        _resume,
        _runs,
        _setup,
    )
    from ._assemble import Hooks
    from ._capability import Capability
    from ._config import Instructions, RunConfig
    from ._drive import AgentDrive
    from ._extensions import ToolFactory
    from ._guardrails import InputGuardrail, OutputGuardrail
    from ._handoffs import Handoff, HandoffTarget
    from ._hooks import SessionLink
    from ._output import Output
    from ._run_args import DriveOptions, RunArgs
    from ._stream import AgentStream
else:
    _assemble = lazy_module("bastion.agent._assemble")
    _drive = lazy_module("bastion.agent._drive")
    _handoffs = lazy_module("bastion.agent._handoffs")
    _input = lazy_module("bastion.agent._input")
    _loop = lazy_module("bastion.agent._loop")
    _persist = lazy_module("bastion.agent._persist")
    _progress = lazy_module("bastion.agent._progress")
    _resume = lazy_module("bastion.agent._resume")
    _runs = lazy_module("bastion.agent._runs")
    _setup = lazy_module("bastion.agent._setup")

__all__ = ["Agent"]

_DEFAULT_RETRY = RetryConfig()


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
        tools: Sequence[Tool | Callable[..., object] | ToolSource | ToolFactory] = (),
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
        built = _assemble.assemble(
            _assemble.AgentSpec(
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
        self.name = config.name
        """The agent's name (events, traces, the ``agent:<name>`` key)."""
        self.description = config.description
        """What the agent does, for humans and for other agents."""
        self._runs = _runs.AgentRuns(config, owns_store=owns_store, live=live)
        self.progress = _progress.Progress(self._runs.artifact_stores, config.name)
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

    def __repr__(self) -> str:
        config = self.config
        tools = list(config.tools.by_name)
        return f"Agent(name={self.name!r}, model={config.model.key!r}, tools={tools!r})"

    def with_model(self, model: Model | str) -> Agent[DepsT, OutputT]:
        """A copy of this agent on another model (its fallback models are kept).

        Raises:
            UserError: ``model`` is not a Model or a known ``"provider:model"`` string.
        """
        variant = _setup.model_variant(self.config, model)
        return self._derive(variant, owns_store=self._runs.owns_store)

    def with_store(self, store: Stores | str) -> Agent[DepsT, OutputT]:
        """A copy of this agent that journals to (and resumes from) another store.

        A URL store is opened on the copy's first run and closed by its ``aclose()``.

        Raises:
            UserError: ``store`` is not a Stores or a valid store URL.
        """
        variant = replace(self.config, store=_setup.build_store(store, self.name))
        return self._derive(variant, owns_store=isinstance(store, str))

    def drive(
        self,
        input: str | Sequence[UserPart] | RunState | None = None,
        *,
        resume: str | None = None,
        directive: Directive | None = None,
        deps: DepsT | None = None,
        **options: Unpack[DriveOptions],
    ) -> AgentDrive[OutputT]:
        """Start (or resume) a run the application drives, deciding each tool call.

        An async generator of the run's events: each tool call's
        ``tool.approval.requested`` event waits for the value sent next with
        ``asend``: ``None`` / ``Allow()`` runs the call, ``Rewrite(arguments)`` runs it
        with other arguments, ``Mock(result)`` skips it with that result, ``Deny(reason)``
        refuses it. ``async for`` runs every call. The decisions pass the agent's tool
        gate and journal like approvals (see ``docs/agent-loop.md``).

        ``input``, ``directive``, ``deps`` and ``**options`` (``message_history``,
        ``session_id``, ``user_id``, ``tenant_id``, ``metadata``) are :meth:`stream`'s;
        ``resume`` is the id of a journaled run to continue instead (the agent's store).

        Raises:
            UserError: As :meth:`stream` and :meth:`resume_stream` do.
        """
        return _drive.start_drive(self, input, resume, directive, deps, options)

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
            config: Run this variant of :attr:`config` (``dataclasses.replace``; same name).
            session_link: The session of the run (``bastion.sessions`` passes it).
            run_id: The new run's id (default: a fresh one; a sub-agent's derives from
                its parent's call, so a resumed parent finds it again).
            active_agent: Start with this agent active, as if a handoff had made it so:
                this agent or one it reaches through handoffs (:meth:`reaches`).

        Returns:
            The run's :class:`AgentStream`; the run starts when iteration starts.

        Raises:
            UserError: No input; a state that cannot be resumed (another agent's, not
                suspended, or a directive that does not decide exactly the pending calls);
                or an ``active_agent`` this agent cannot reach.
        """
        run = _runs.run_config(self.config, config, session_link)
        if isinstance(input, RunState):
            return _resume.resume_state(self._runs, run, input, directive, deps, session_link)
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
        journal = self._runs.journal(run, state.run_id, 0, session_link)
        scope = self._runs.scope(run, state, deps, journal, link=session_link)
        return self._runs.stream(scope, lambda: _loop.run_loop(scope, input, message_history))

    def reaches(self, name: str) -> bool:
        """True when ``name`` is this agent or one reachable through its handoffs (now)."""
        return _handoffs.find_agent(self.config, name) is not None

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
            session_link: The session whose turn a crash cut (it holds the turn lease).
            config: Continue under this variant of :attr:`config`, as :meth:`stream` takes.

        Raises:
            UserError: The agent has no store (at once); when iteration starts: the store
                has no such run, it belongs to another agent, or the directive does not fit.
        """
        config = _runs.run_config(self.config, config, None)
        if config.store is None:
            raise UserError(
                f"Agent {self.name!r} has no store: pass Agent(..., store='sqlite:///runs.db') "
                "(the store the run was journaled in) to resume runs by id."
            )
        config = _runs.run_config(self.config, config, session_link)
        return _resume.resume_journaled(self._runs, config, run_id, directive, deps, session_link)

    async def resume(
        self,
        run_id: str,
        *,
        directive: Directive | None = None,
        deps: DepsT | None = None,
    ) -> RunResult[OutputT]:
        """Continue a journaled run to its end (or next suspension); see :meth:`resume_stream`."""
        return await self.resume_stream(run_id, directive=directive, deps=deps).drain()

    def steer(self, text: str) -> bool:
        """Steer the agent's run in flight (:meth:`AgentStream.steer`).

        Returns False when no run is in flight: the message is dropped, never kept for a
        later run.

        Raises:
            UserError: Several runs are in flight (steer one with its stream), or ``text``
                is not a non-empty string.
        """
        stream = self._runs.only("steer")
        return stream is not None and stream.steer(text)

    def follow_up(self, text: str) -> bool:
        """Follow up the agent's run in flight (:meth:`AgentStream.follow_up`).

        Returns False when no run is in flight.

        Raises:
            UserError: Several runs are in flight, or ``text`` is not a non-empty string.
        """
        stream = self._runs.only("follow_up")
        return stream is not None and stream.follow_up(text)

    async def compact(
        self,
        messages: Sequence[Message],
        *,
        config: ContextConfig | None = None,
        keep_last: int | None = None,
    ) -> Compaction:
        """Compact a conversation now, as a run would when it passes its trigger.

        Uses the agent's ``context`` settings, or ``config``; ``keep_last``: summarize every
        exchange older than the last ``keep_last``, whatever the budget. The summarizer's
        calls are governed. Use :attr:`Compaction.messages` as the next run's history.

        Raises:
            UserError: The agent has no ``context`` and no ``config`` was given, or
                ``keep_last`` is negative.
        """
        return await _runs.compact_now(self.config, messages, config, keep_last)

    def serialize_state(self, state: RunState) -> str:
        """A run's state as JSON text (:func:`bastion.agent.run_state_to_json`)."""
        return _persist.run_state_to_json(state)

    def deserialize_state(self, text: str | bytes) -> RunState:
        """Load a state written by :meth:`serialize_state` for a run of this agent.

        Raises:
            UserError: The text is not a run state, or the run belongs to another agent.
        """
        state = _persist.run_state_from_json(text)
        if state.agent_name != self.name:
            raise UserError(
                f"Run {state.run_id} belongs to agent {state.agent_name!r}, not {self.name!r}."
            )
        return state

    async def stores(self) -> Stores:
        """The agent's store, opened (an in-memory one when the agent has none)."""
        return await self._runs.artifact_stores()

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
        **kwargs: Unpack[RunArgs[DepsT]],
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
        self, input: str | Sequence[UserPart] | None, kwargs: RunArgs[DepsT]
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
        """Release the tool sources, code-mode worker and URL store; the agent stays usable."""
        await self._runs.aclose()

    def abort(
        self,
        *,
        drain: bool = False,
        on_pending_approvals: Literal["deny", "hold", "fail"] = "deny",
    ) -> int:
        """Abort every run of this agent in flight; returns how many were asked to stop.

        Takes the arguments of :meth:`AgentStream.abort`.
        """
        live = list(self._runs.live)
        for stream in live:
            stream.abort(drain=drain, on_pending_approvals=on_pending_approvals)
        return len(live)

    @property
    def runs_in_flight(self) -> int:
        """How many runs of this agent are in flight."""
        return len(self._runs.live)  # O(1): only started, unfinished runs are in the set


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
    if active_agent is not None and _handoffs.find_agent(run, active_agent) is None:
        raise UserError(
            f"active_agent={active_agent!r}: agent {run.name!r} cannot reach it through "
            "its handoffs (agents, or names in their agent_registry)."
        )
    _input.check_user_input(input)
    _input.check_history(message_history)
    if input is None and not message_history:
        raise UserError("Give the run an input or a message_history to continue.")
