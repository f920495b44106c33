"""``RunScope``: what the step modules share while one run is in flight.

A scope holds the run's frozen configuration (:class:`~bastion.agent._config.RunConfig`),
its mutable state, its context, governance, journal and session link. The steps read
nothing else: they never see the ``Agent`` object.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from bastion.context import TranscriptGuard

if TYPE_CHECKING:
    from collections.abc import Callable

    from bastion.core import Model, OutputMode, RunContext, ToolCall
    from bastion.tools import ToolOutcome, ToolSet

    from ._config import RunConfig
    from ._context import RunWindow
    from ._governance import RunGovernance
    from ._hooks import SessionLink
    from ._inbox import Inbox
    from ._journal import RunJournal
    from ._state import RunState

__all__ = [
    "ANCESTRY",
    "GRAPH",
    "INVOCATION",
    "PARENT_AGENT",
    "PARENT_RUN_ID",
    "PARENT_TOOL_CALL_ID",
    "AbortRequest",
    "RunAborted",
    "RunScope",
    "live_scope",
]

# Keys of a child run's ``metadata`` (journaled with the run): who started it, and where.
PARENT_RUN_ID = "bastion.parent_run_id"
PARENT_TOOL_CALL_ID = "bastion.parent_tool_call_id"
PARENT_AGENT = "bastion.parent_agent"
ANCESTRY = "bastion.ancestry"  # agent names from the root run to the parent
INVOCATION = "bastion.invocation_id"  # the root run, whose invocation windows count it
GRAPH = "bastion.graph_id"  # the graph execution a run acts in (a graph's agent node)

# Runs in flight by id, for tools that act within their run (``Agent.as_tool`` finds its
# parent's governance, approvals, store and abort requests here).
_LIVE: weakref.WeakValueDictionary[str, RunScope] = weakref.WeakValueDictionary()


def live_scope(run_id: str) -> RunScope | None:
    """The scope of the run ``run_id`` while it is in flight, else ``None``."""
    return _LIVE.get(run_id)


@dataclass(kw_only=True, slots=True, frozen=True)
class AbortRequest:
    """How a caller asked the run to stop."""

    drain: bool
    on_pending_approvals: Literal["deny", "hold", "fail"]


class RunAborted(Exception):
    """Raised inside the loop at a checkpoint after a hard abort was requested."""


class RunScope:
    """The run's configuration, state, context, and the number of the last event it yielded."""

    __slots__ = (
        "__weakref__",
        "abort",
        "abort_listeners",
        "cancel_sent",
        "clock",
        "config",
        "ctx",
        "ending",
        "governance",
        "guard",
        "inbox",
        "journal",
        "model_hint",
        "output_mode",
        "pinned_model",
        "quiet",
        "run_id",
        "seq",
        "session_link",
        "state",
        "tools",
        "unreported",
        "window",
        "withheld_tools",
    )

    def __init__(
        self,
        config: RunConfig,
        state: RunState,
        ctx: RunContext[object],
        governance: RunGovernance | None = None,
        *,
        journal: RunJournal | None = None,
        window: RunWindow | None = None,
        session_link: SessionLink | None = None,
    ) -> None:
        self.config = config
        self.state = state
        self.ctx = ctx
        self.clock = config.clock
        # The tools of the current step: what the model is shown and what may run.
        self.tools: ToolSet = config.tools
        # A session's runs: its state and its drain points before and after model calls.
        self.session_link = session_link
        # Steering and follow-ups sent to a plain run (``stream.steer``); made on first use.
        self.inbox: Inbox | None = None
        self.run_id = state.run_id
        # The ``seq`` of the last event the run yielded; only the loop's numbering point
        # (``run_loop``) advances it. A resumed run goes on after its journal's highest.
        self.seq = state.last_seq
        self.abort: AbortRequest | None = None
        self.cancel_sent = False
        self.ending = False
        self.model_hint: str | None = None  # preferred by the tools a step ran, for the next step
        # The step's model when it was named explicitly: no fallback model replaces it.
        self.pinned_model: Model | None = None
        # Tools the step's ``prepare_step`` left out: a call to one is refused.
        self.withheld_tools: frozenset[str] = frozenset()
        # The run's governance; None (no cost) when the agent has no policies or budget.
        self.governance = governance
        self.unreported: list[tuple[ToolCall, ToolOutcome | None]] = []
        # Writes the run's journal when the agent has a store; None costs nothing.
        self.journal = journal
        # The run's context window (token ledger, compaction); None without ContextConfig.
        self.window = window
        # Checks each request's history, only what the run added since the last request.
        self.guard = TranscriptGuard()
        # The structured-output mode of the current step (set when the agent has one).
        self.output_mode: OutputMode | None = None
        # Told of each abort request (a sub-agent's run follows its parent's abort).
        self.abort_listeners: list[Callable[[AbortRequest], None]] = []
        # Nobody reads the run's events (``agent.run()`` with no event bus): the model
        # call's streaming events (deltas, tool-call pieces) are not built at all.
        self.quiet = False
        _LIVE[state.run_id] = self

    def current_tools(self) -> ToolSet:
        """Take the agent's current tool set for the next step (tools registered meanwhile)."""
        tools = self.config.catalog.current()
        self.tools = tools
        return tools

    def check_abort(self) -> None:
        """Raise :class:`RunAborted` if a hard abort is pending."""
        abort = self.abort
        if abort is not None and not abort.drain:
            raise RunAborted
