"""An agent's less common settings, grouped by what they shape.

``ToolOptions`` (how tools are gated, named, limited and invoked), ``ModelOptions`` (which
models a step may use and how their answers are kept), ``RunOptions`` (how runs end, share
the agent, hand off and report) and ``GovernanceOptions`` (oracles, interrupts, sharing).
Each is a frozen dataclass whose defaults suit most agents; ``Agent(...)`` checks them.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bastion.tools import ToolRetry

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

    from bastion.context import Suggestions
    from bastion.core import EventBus, Model, SandboxConfig
    from bastion.governance import Governor, InterruptHandler, Oracle, Policy
    from bastion.tools import (
        ApprovalConfig,
        BeforeToolCall,
        CodeModeConfig,
        CollisionStrategy,
        Embedder,
        InboundPolicy,
        MemoryGuard,
        RepairHook,
        ResultReader,
    )

    from ._fallback import FallbackPolicy
    from ._handoffs import AgentRegistry
    from ._loop_detection import LoopDetection

__all__ = ["GovernanceOptions", "ModelOptions", "RunOptions", "ToolOptions"]

_DEFAULT_TOOL_RETRY = ToolRetry()


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOptions:
    """How an agent's tool calls are decided, and how its tools are named, limited and run.

    Pass it as ``Agent(..., tool_options=ToolOptions(...))``; the defaults suit most agents.

    Example::

        Agent("a", model=model, tools=[search, send_email],
              tool_options=ToolOptions(deny=["delete_*"], max_parallel=4))

    Attributes:
        approval: How calls needing approval are decided: a callback, or (by default)
            suspending the run with status ``awaiting_approval`` until a
            :class:`~bastion.tools.Directive` resumes it.
        before_call: Hooks deciding per call, in order (first decision wins):
            ``Allow()``, ``Deny(reason)``, ``Rewrite(arguments)``, ``Mock(result)``,
            ``Ask()``, or ``None`` for no opinion.
        repair: Given a call with invalid arguments and the validation error, returns
            repaired arguments (JSON text or a dict) or ``None``; one round.
        deny: Name patterns (``fnmatch``) of tools that may never run in this agent.
        max_parallel: How many tool calls of one step may run at once.
        loop_detection: What happens when the model calls one tool with identical
            arguments again and again: ``LoopDetection()`` warns the model on the third
            such call, in that call's result. ``None`` (default): not checked.
        sandbox: The sandbox of tools that do not choose their own ``sandbox=``: a
            :class:`~bastion.core.SandboxConfig`, ``True`` (the defaults) or ``False`` /
            ``None`` (none). A tool's own setting wins; ``False`` on a tool turns it off.
        collision_strategy: Two tools of different sources (``trust_class``) with one
            name: ``auto-prefix`` renames the lower-precedence one ``<source>__<name>``,
            ``priority`` drops it, ``manual`` raises ``DuplicateToolNameError``.
        inbound_sanitization: One inbound policy for every tool's output, replacing each
            tool's own choice and its trust-class default. ``None`` keeps the per-tool choice.
        cancel_grace: Seconds an aborted step waits for tools that ignore cancellation
            before abandoning them.
        event_queue_depth: Most live ``tool.execute.progress`` / ``partial`` events held
            for a slow consumer; beyond, the oldest is dropped.
        cache_size: Most results kept by the cache of tools with a ``cache_ttl``.
        search_embedder: Semantic backend for ``tool_search`` (registered when any tool
            has ``defer_loading=True``), fused with its lexical ranking.
        invocation: ``direct`` (the model calls tools) or ``code-mode`` (the model sees only
            ``code_execute`` and ``code_search`` and calls tools from Python in a sandbox;
            needs ``bastion[code]``).
        code_mode: Limits of code-mode scripts.
        spill_dir: Root of the files ``spill_to_file`` tools store full results in
            (default ``<tmpdir>/bastion-spill``; one sub-directory per run).
        summary_model: The cheaper model ``summarize`` tools ask (default: the ``fast``
            entry of ``ModelOptions.tiers``, else the agent's model).
        result_readers: Further sources of handles ``read_result`` pages (MCP resources,
            ...), tried in order after the spill store; giving any registers ``read_result``.
        retry: How rate-limited calls of ``pure``, ``read_only`` or idempotent tools are
            retried (default 3 attempts with exponential backoff on the run's clock).
            ``None``: never.
        memory_guard: Snapshot memory regions (default: the run's ``session_state``)
            before each call of a ``pure`` or ``read_only`` tool and verify them after; a
            change is counted and audited, or fails the call (``on_mismatch="fail"``).
    """

    approval: ApprovalConfig | None = None
    before_call: Sequence[BeforeToolCall] = ()
    repair: RepairHook | None = None
    deny: Sequence[str] = ()
    max_parallel: int = 8
    loop_detection: LoopDetection | None = None
    sandbox: bool | SandboxConfig | None = None
    collision_strategy: CollisionStrategy = "auto-prefix"
    inbound_sanitization: InboundPolicy | None = None
    cancel_grace: float = 0.05
    event_queue_depth: int = 256
    cache_size: int = 1024
    search_embedder: Embedder | None = None
    invocation: Literal["direct", "code-mode"] = "direct"
    code_mode: CodeModeConfig | None = None
    spill_dir: str | os.PathLike[str] | None = None
    summary_model: Model | str | None = None
    result_readers: Sequence[ResultReader] = ()
    retry: ToolRetry | None = _DEFAULT_TOOL_RETRY
    memory_guard: MemoryGuard | None = None


@dataclass(frozen=True, kw_only=True, slots=True)
class GovernanceOptions:
    """The less common governance settings of an agent: per-key oracles, interrupts, sharing.

    The common case stays flat: ``Agent(..., policies=[...], budget=Budget(...))``. Pass
    this as ``Agent(..., governance=GovernanceOptions(...))`` for the rest.

    Example::

        Agent("a", model=model, budget=Budget(cost_usd=5, window="day"),
              governance=GovernanceOptions(
                  oracles={"tool:search": [Limit(type="calls", max=5, window="minute")]}))

    Attributes:
        oracles: Policies and limits per oracle key (``"llm"``, ``"llm:openai"``,
            ``"tool:search"``, ...); a key inherits its ancestors'.
        handle_interrupt: Decides interrupts (a mutable limit reached, a policy's
            ``interrupt()``); without it the run suspends (``awaiting_approval``) until a
            ``Directive(interrupts=[...])`` resumes it.
        governor: A governor to share (between agents, with your own actions). Exclusive
            with ``oracles``, ``handle_interrupt`` and the agent's ``policies`` and
            ``budget``: configure the shared governor itself. By default one is built on
            the agent's clock when any of those is given.
        events: Which governance signals the run's stream carries as ``governance.signal``
            events: ``"decisions"`` (default: denials, breaches, interrupts, mutations),
            ``"all"`` (also the routine ``oracle.exec.in/out`` and ``oracle.policy.<oracle>``
            signals of every allowed action) or ``"none"``. Observers of the governor
            (``governor.subscribe``) get every signal regardless.
    """

    oracles: Mapping[str, Oracle | Sequence[Policy]] | None = None
    handle_interrupt: InterruptHandler | None = None
    governor: Governor | None = None
    events: Literal["decisions", "all", "none"] = "decisions"


@dataclass(frozen=True, kw_only=True, slots=True)
class ModelOptions:
    """Which models a step may use besides ``model``, and how their answers are kept.

    Sampling (temperature, ``tool_choice``, ...) is ``Agent(model_settings=...)``; this is
    the rest of how the agent calls models. Pass it as
    ``Agent(..., model_options=ModelOptions(...))``.

    Example::

        Agent("a", model="openai:gpt-5",
              model_options=ModelOptions(fallbacks=["anthropic:claude-sonnet-4-5"],
                                         tiers={"fast": "openai:gpt-5-mini"}))

    Attributes:
        fallbacks: Models to try, in order, when a step fails on rate limits, capacity or
            context length (or the errors ``fallback_policy`` names).
        fallback_policy: Which errors move a step to the next fallback model, a circuit
            breaker that skips models failing repeatedly, and an ``on_fallback`` hook
            (:class:`FallbackPolicy`).
        tiers: Models for the tiers ``fast``, ``balanced`` and ``smart`` that tools
            (``tool(preferred_model=...)``) and the agent may prefer.
        preferred: A tier or ``"provider:model"`` the agent prefers over ``model`` when
            no tool hint applies (a tool's hint wins, a ``LoopHooks.prepare_step`` model
            beats both).
        reasoning_retention: ``keep`` sends earlier reasoning (with its signatures) back
            to the model on the next step, as tool-use loops need; ``strip`` leaves it out.
        record_responses: Also keep each model response as the provider streamed it
            (every chunk) in the journal, so ``bastion.testing.ReplayModel`` can replay
            the run without calling the model. Needs a ``store``.
    """

    fallbacks: Sequence[Model | str] = ()
    fallback_policy: FallbackPolicy | None = None
    tiers: Mapping[str, Model | str] | None = None
    preferred: str | None = None
    reasoning_retention: Literal["keep", "strip"] = "keep"
    record_responses: bool = False


@dataclass(frozen=True, kw_only=True, slots=True)
class RunOptions:
    """How an agent's runs end, share the agent, hand off, and report.

    Pass it as ``Agent(..., run_options=RunOptions(...))``.

    Example::

        Agent("a", model=model, max_steps=8,
              run_options=RunOptions(on_max_steps="return", max_concurrent_runs=4))

    Attributes:
        on_max_steps: What a run that used ``max_steps`` model calls does: ``fail``
            (status ``failed``, code ``stop_condition``) or ``return`` (status ``stopped``
            with the last answer).
        max_concurrent_runs: Limit on runs in flight at once (``None``: unlimited).
        event_bus: Observers fed every event of every run (``EventBus``).
        session_send_mode: The default ``mode`` of ``send()`` in this agent's sessions:
            ``steer`` or ``queue``; a session's ``send_mode`` and a call's ``mode``
            override it.
        suggestions: After each completed run, ask a model for what the user may say
            next (:class:`~bastion.context.Suggestions`). The ``agent.suggestions`` event
            and ``result.suggestions`` carry them; the call is governed and counted in
            the run's usage. ``None`` (default): off.
        max_handoffs: Most handoffs one run may make before this agent's next one fails
            the run (code ``max_handoffs``).
        agent_registry: Where handoff targets named by a string are found (and where a
            resuming process finds the active agent of a run).
    """

    on_max_steps: Literal["fail", "return"] = "fail"
    max_concurrent_runs: int | None = None
    event_bus: EventBus | None = None
    session_send_mode: Literal["steer", "queue"] = "steer"
    suggestions: Suggestions | None = None
    max_handoffs: int = 10
    agent_registry: AgentRegistry | None = None
