"""``ToolOptions`` and ``GovernanceOptions``: an agent's less common settings, grouped."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bastion.tools import ToolRetry

if TYPE_CHECKING:
    import os
    from collections.abc import Mapping, Sequence

    from bastion.core import Model
    from bastion.governance import Governor, InterruptHandler, Oracle, Policy
    from bastion.tools import (
        CodeModeConfig,
        CollisionStrategy,
        Embedder,
        InboundPolicy,
        MemoryGuard,
        ResultReader,
    )

__all__ = ["GovernanceOptions", "ToolOptions"]

_DEFAULT_TOOL_RETRY = ToolRetry()


@dataclass(frozen=True, kw_only=True, slots=True)
class ToolOptions:
    """How an agent's tools are named, screened, limited, cached and invoked.

    Pass it as ``Agent(..., tool_options=ToolOptions(...))``; the defaults suit most agents.

    Example::

        Agent("a", model=model, tools=[search], tool_options=ToolOptions(cache_size=64))

    Attributes:
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
            entry of ``model_tier_map``, else the agent's model).
        result_readers: Further sources of handles ``read_result`` pages (MCP resources,
            ...), tried in order after the spill store; giving any registers ``read_result``.
        retry: How rate-limited calls of ``pure``, ``read_only`` or idempotent tools are
            retried (default 3 attempts with exponential backoff on the run's clock).
            ``None``: never.
        memory_guard: Snapshot memory regions (default: the run's ``session_state``)
            before each call of a ``pure`` or ``read_only`` tool and verify them after; a
            change is counted and audited, or fails the call (``on_mismatch="fail"``).
    """

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
