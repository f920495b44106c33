"""``RunScope``: what the step modules share while one run is in flight."""

from __future__ import annotations

import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from bastion.context import TranscriptGuard
from bastion.core import Clock, OutputMode, RunContext, ToolCall
from bastion.tools import ToolOutcome

from ._state import RunState

if TYPE_CHECKING:
    from ._agent import Agent
    from ._context import RunWindow
    from ._governance import RunGovernance
    from ._journal import RunJournal

__all__ = ["AbortRequest", "RunAborted", "RunScope", "live_scope"]

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
    """The run's agent, state, context, and the number of the last event it yielded."""

    __slots__ = (
        "__weakref__",
        "abort",
        "abort_listeners",
        "agent",
        "cancel_sent",
        "clock",
        "ctx",
        "ending",
        "governance",
        "guard",
        "journal",
        "model_hint",
        "output_mode",
        "quiet",
        "run_id",
        "seq",
        "state",
        "unreported",
        "window",
    )

    def __init__(
        self,
        agent: Agent[Any, Any],
        state: RunState,
        ctx: RunContext[Any],
        clock: Clock,
        governance: RunGovernance | None = None,
        *,
        journal: RunJournal | None = None,
        window: RunWindow | None = None,
    ) -> None:
        self.agent = agent
        self.state = state
        self.ctx = ctx
        self.clock = clock
        self.run_id = state.run_id
        # The ``seq`` of the last event the run yielded; only the loop's numbering point
        # (``run_loop``) advances it. A resumed run goes on after its journal's highest.
        self.seq = state.last_seq
        self.abort: AbortRequest | None = None
        self.cancel_sent = False
        self.ending = False
        self.model_hint: str | None = None  # set by the tools a step ran (G-83)
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

    def check_abort(self) -> None:
        """Raise :class:`RunAborted` if a hard abort is pending."""
        abort = self.abort
        if abort is not None and not abort.drain:
            raise RunAborted
