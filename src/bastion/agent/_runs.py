"""``AgentRuns``: the runs of one agent object, their scopes, journals and store.

An :class:`~bastion.agent.Agent` is its configuration; what its runs share at run time
lives here: the set of runs in flight (``max_concurrent_runs``, ``abort``), the agent's
store (opened once, on the first run that needs it) and the making of each run's
:class:`RunScope` and :class:`RunJournal`. A variant of the agent (``with_model``) gets its
own ``AgentRuns``, sharing the set in flight where it shares the runs.
"""

from __future__ import annotations

import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from bastion.core import RunContext, UserError, new_id

from ._handoffs import find_agent
from ._journal import RunJournal
from ._ownership import run_keeper
from ._progress import memory_stores
from ._scope import ANCESTRY, GRAPH, INVOCATION, RunScope
from ._setup import build_context
from ._stream import AgentStream, check_capacity
from .steps._handoff import activate

if TYPE_CHECKING:
    from collections.abc import AsyncGenerator, Callable, Sequence

    from bastion.context import Compaction, ContextConfig
    from bastion.core import AgentEvent, Message
    from bastion.stores import Stores

    from ._config import RunConfig
    from ._hooks import SessionLink
    from ._state import RunState

__all__ = ["AgentRuns", "compact_now", "run_config"]


class AgentRuns:
    """What the runs of one agent object share: the runs in flight and the open store."""

    __slots__ = ("_memory", "_ready", "config", "live", "owns_store")

    def __init__(
        self,
        config: RunConfig,
        *,
        owns_store: bool,
        live: weakref.WeakSet[AgentStream[Any]] | None = None,
    ) -> None:
        self.config = config
        """The agent's own config (its name, store and limit on runs in flight)."""
        self.live: weakref.WeakSet[AgentStream[Any]] = weakref.WeakSet() if live is None else live
        """The started, unfinished runs."""
        self.owns_store = owns_store
        """Whether the agent opened its store from a URL (and closes it)."""
        self._ready = False
        self._memory: Stores | None = None

    def only(self, method: str) -> AgentStream[Any] | None:
        """The one run in flight (``None``: none) that ``agent.<method>()`` acts on.

        Raises:
            UserError: Several runs are in flight.
        """
        live = [stream for stream in self.live if not stream.done]
        if len(live) > 1:
            raise UserError(
                f"Agent {self.config.name!r} has {len(live)} runs in flight: call {method}() "
                "on the stream of the run you mean (agent.stream(...))."
            )
        return live[0] if live else None

    def stream(
        self, scope: RunScope, events: Callable[[], AsyncGenerator[AgentEvent, None]]
    ) -> AgentStream[Any]:
        """A run's stream, counted in flight from its first event to its end."""
        return AgentStream(scope, events, self._on_start, self._on_done)

    def scope(
        self,
        config: RunConfig,
        state: RunState,
        deps: object,
        journal: RunJournal | None = None,
        *,
        governed: bool = True,
        link: SessionLink | None = None,
    ) -> RunScope:
        """The scope of one run of ``config`` on ``state``.

        ``governed=False``: a scope that runs nothing (a resumed run's, until it is loaded).
        """
        governance = None  # no cost when the agent has no policies or budget
        if config.governance is not None and governed:
            # A sub-agent's run acts below its parents, in its root run's invocation.
            metadata = state.metadata
            governance = config.governance.open(
                state.run_id,
                invocation=metadata.get(INVOCATION),
                ancestry=metadata.get(ANCESTRY) or (),
                graph=metadata.get(GRAPH) or "",
            )
        ctx: RunContext[object] = RunContext(
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

    def journal(
        self, config: RunConfig, run_id: str, seq: int | None, link: SessionLink | None
    ) -> RunJournal | None:
        """The journal of a run of ``config`` (``None``: its agent has no store)."""
        store = config.store
        if store is None:
            return None
        # A session's run is owned through its session's turn lease (``bastion.sessions``).
        keeper = None if link is not None else run_keeper(store, run_id, config.clock)
        # The agent's store is opened once; another (a parent run's) is already open.
        opener = self.open_store if store is self.config.store else store.open
        return RunJournal(
            store,
            run_id,
            config.name,
            opener,
            seq,
            keeper=keeper,
            recording=config.record_responses,
        )

    async def open_store(self) -> None:
        """Open the agent's store, once."""
        store = self.config.store
        if store is not None and not self._ready:
            await store.open()
            self._ready = True

    async def artifact_stores(self) -> Stores:
        """The agent's store, opened; an in-memory one when it has none."""
        store = self.config.store
        if store is not None:
            await self.open_store()
            return store
        if self._memory is None:
            self._memory = memory_stores()
            await self._memory.open()
        return self._memory

    async def aclose(self) -> None:
        """Close the agent's tool sources, its code-mode worker and a store it opened."""
        await self.config.tool_sources.aclose()
        if self.config.code_mode is not None:
            await self.config.code_mode.aclose()
        store = self.config.store
        if self.owns_store and store is not None and self._ready:
            self._ready = False
            await store.close()

    def _on_start(self, stream: AgentStream[Any]) -> None:
        limit = self.config.max_concurrent_runs
        if limit is not None:
            check_capacity(len(self.live), limit, self.config.name)
        self.live.add(stream)

    def _on_done(self, stream: AgentStream[Any]) -> None:
        self.live.discard(stream)
        journal = stream._scope.journal  # pyright: ignore[reportPrivateUsage]
        if journal is not None and journal.keeper is not None:
            journal.keeper.stop()  # closed before its end: the lease lapses, nothing renews it


def run_config(own: RunConfig, given: RunConfig | None, link: SessionLink | None) -> RunConfig:
    """The configuration of one run: ``given`` or the agent's, behind a session's hook."""
    run = own if given is None else given
    if run.name != own.name:
        raise UserError(f"A run of agent {own.name!r} was given the config of agent {run.name!r}.")
    if link is None:
        return run
    executor = run.executor  # the session decides tool calls before the agent's hooks
    gate = executor.gate.with_first_hook(link.before_tool_call)
    return replace(run, executor=executor.with_gate(gate))


async def compact_now(
    own: RunConfig,
    messages: Sequence[Message],
    config: ContextConfig | None,
    keep_last: int | None,
) -> Compaction:
    """``Agent.compact``: compact ``messages`` with the agent's context settings or ``config``."""
    keeper = own.context if config is None else build_context(config, own.model, own.name)
    if keeper is None:
        raise UserError(
            f"Agent {own.name!r} has no context=ContextConfig(...): pass "
            "compact(messages, config=ContextConfig(...))."
        )
    governance = None if own.governance is None else own.governance.open(new_id("run"))
    if keep_last is None:
        return await keeper.compact(messages, None, governance=governance)
    if keep_last < 0:
        raise UserError(f"compact(keep_last={keep_last}): expected 0 or more exchanges.")
    return await keeper.summarize_older(messages, keep_last, governance=governance)


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
            "run_options.agent_registry) it had when the run started."
        )
    return found
